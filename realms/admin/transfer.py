"""Realm import, partial import and partial export in the console, as Keycloak's console has them
(Create realm's resource file; Realm settings' Action menu), each run as a background job
(``realms.admin.jobs``): its page shows its progress, then what it did or why it failed."""
import json

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from ..administration.admin_permissions import can, console_admin
from ..http.web import client_address
from ..models import ConsoleJob, Realm
from ..representation.partial import POLICIES
from .base import ViewOnly, console_access
from .jobs import start as start_job
from .names import time_column


def _json_object(upload):
    """The uploaded file's JSON object, or a ValidationError saying what is wrong with it."""
    try:
        data = json.load(upload)
    except UnicodeDecodeError:
        raise forms.ValidationError("The file is not text: choose a JSON file exported from a realm.") from None
    except json.JSONDecodeError as exc:
        raise forms.ValidationError(f"The file is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}).") \
            from None
    if not isinstance(data, dict):
        raise forms.ValidationError("The file holds no realm: expected a JSON object, as a realm export has.")
    return data


class RealmImportForm(forms.Form):
    file = forms.FileField(label="Resource file", widget=forms.ClearableFileInput(attrs={"accept": ".json,application/json"}),
                           help_text="A realm exported from Keycloak or from this server (JSON). The new realm takes "
                                     "the file's name.")

    def clean_file(self):
        data = _json_object(self.cleaned_data["file"])
        name = data.get("realm")
        if not isinstance(name, str) or not name.strip():
            raise forms.ValidationError("The file names no realm: its \"realm\" key is missing or empty.")
        if Realm.objects.filter(name=name).exists():
            raise forms.ValidationError(f"A realm named {name} already exists.")
        return data


_POLICY_LABELS = {"FAIL": "Fail: import nothing", "SKIP": "Skip it", "OVERWRITE": "Overwrite it"}


class PartialImportForm(forms.Form):
    file = forms.FileField(label="Resource file", widget=forms.ClearableFileInput(attrs={"accept": ".json,application/json"}),
                           help_text="Its users, clients, groups, realm roles and client roles are imported "
                                     "(a realm export, or a partial one).")
    policy = forms.ChoiceField(
        label="If a resource exists", initial="FAIL", widget=forms.RadioSelect,
        choices=[(policy, _POLICY_LABELS[policy]) for policy in POLICIES])

    def clean_file(self):
        return _json_object(self.cleaned_data["file"])


class PartialExportForm(forms.Form):
    groups_and_roles = forms.BooleanField(label="Include groups and roles", required=False)
    clients = forms.BooleanField(label="Include clients", required=False)


@admin.register(ConsoleJob)
class ConsoleJobAdmin(ViewOnly, admin.ModelAdmin):
    """The jobs an admin started (every job for a superuser), newest first; nothing here is
    edited: a job is started from its form and ends by itself."""

    list_display = ("kind", "realm_name", "status", "progress_bar", "created_at", "finished_at")
    list_display_links = ("kind",)
    change_list_template = "admin/realms/consolejob/change_list.html"

    def get_queryset(self, request):
        jobs_ = super().get_queryset(request)
        return jobs_ if request.user.is_superuser else jobs_.filter(started_by=request.user)

    def has_module_permission(self, request):
        return console_access(request)

    def has_view_permission(self, request, obj=None):
        return console_access(request) and (obj is None or request.user.is_superuser or obj.started_by_id == request.user.pk)


    created_at = time_column("created", "Created")
    finished_at = time_column("finished", "Finished")

    @admin.display(description="Progress")
    def progress_bar(self, job):
        return format_html('<progress max="100" value="{}">{} %</progress> {}', job.progress, job.progress,
                           job.step or job.get_status_display())

    def changelist_view(self, request, extra_context=None):
        running = self.get_queryset(request).filter(status__in=(ConsoleJob.QUEUED, ConsoleJob.RUNNING)).exists()
        return super().changelist_view(request, {"refresh": running, "may_import": _may_create_realm(request),
                                                 **(extra_context or {})})

    def get_urls(self):
        view = self.admin_site.admin_view
        return [
            path("import-realm/", view(self.realm_import_view), name="realms_consolejob_realm_import"),
            path("<str:realm_id>/partial-import/", view(self.partial_import_view), name="realms_consolejob_partial_import"),
            path("<str:realm_id>/partial-export/", view(self.partial_export_view), name="realms_consolejob_partial_export"),
            path("<str:job_id>/download/", view(self.download_view), name="realms_consolejob_download"),
            path("<str:object_id>/change/", view(self.job_view), name="realms_consolejob_change"),
            *super().get_urls(),
        ]

    # Starting a job -----------------------------------------------------------------------------

    def _start(self, request, kind, realm_name, *, realm=None, options=None, payload=None):
        job = ConsoleJob.objects.create(kind=kind, realm=realm, realm_name=realm_name, started_by=request.user,
                                        ip_address=client_address(request), options=options or {}, payload=payload)
        start_job(job)
        self.message_user(request, f"{job.get_kind_display()} of {realm_name} started.", messages.INFO)
        return HttpResponseRedirect(reverse("admin:realms_consolejob_change", args=[job.pk]))

    def _form_page(self, request, form, title, submit, realm=None):
        context = {**self.admin_site.each_context(request), "opts": self.model._meta, "title": title, "form": form,
                   "submit": submit, "realm": realm}
        return TemplateResponse(request, "admin/realms/consolejob/start.html", context)

    def realm_import_view(self, request):
        if not _may_create_realm(request):
            raise PermissionDenied
        form = RealmImportForm(*_posted(request))
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data["file"]
            return self._start(request, ConsoleJob.REALM_IMPORT, data["realm"], payload=data)
        return self._form_page(request, form, "Import a realm", "Import")

    def _realm(self, request, realm_id, role="manage-realm"):
        realm = get_object_or_404(Realm, pk=realm_id)
        if not can(console_admin(request), realm, role):
            raise PermissionDenied
        return realm

    def partial_import_view(self, request, realm_id):
        realm = self._realm(request, realm_id)
        form = PartialImportForm(*_posted(request))
        if request.method == "POST" and form.is_valid():
            return self._start(request, ConsoleJob.PARTIAL_IMPORT, realm.name, realm=realm,
                               options={"policy": form.cleaned_data["policy"]}, payload=form.cleaned_data["file"])
        return self._form_page(request, form, f"Partial import into {realm.name}", "Import", realm)

    def partial_export_view(self, request, realm_id):
        realm = self._realm(request, realm_id)
        form = PartialExportForm(*_posted(request)[:1])
        if request.method == "POST" and form.is_valid():
            options = form.cleaned_data
            # As the Admin API (Keycloak's RealmAdminResource): groups and roles need query-groups,
            # clients view-clients.
            admin_ = console_admin(request)
            if (options["groups_and_roles"] and not can(admin_, realm, "query-groups")) or (
                    options["clients"] and not can(admin_, realm, "view-clients")):
                raise PermissionDenied
            return self._start(request, ConsoleJob.PARTIAL_EXPORT, realm.name, realm=realm, options=options)
        return self._form_page(request, form, f"Partial export of {realm.name}", "Export", realm)

    # A job's page and its file ------------------------------------------------------------------

    def _job(self, request, job_id):
        job = get_object_or_404(ConsoleJob.objects.select_related("realm"), pk=job_id)
        if not self.has_view_permission(request, job):
            raise PermissionDenied
        return job

    def job_view(self, request, object_id):
        job = self._job(request, object_id)
        result = job.result or {}
        context = {**self.admin_site.each_context(request), "opts": self.model._meta, "title": str(job), "job": job,
                   "warnings": result.get("warnings", ()), "counts": _counts_of(job),
                   "rows": result.get("results", ())[:200], "more_rows": max(0, len(result.get("results", ())) - 200)}
        return TemplateResponse(request, "admin/realms/consolejob/job.html", context)

    def download_view(self, request, job_id):
        job = self._job(request, job_id)
        if job.kind != ConsoleJob.PARTIAL_EXPORT or job.status != ConsoleJob.DONE:
            raise PermissionDenied
        response = HttpResponse(json.dumps(job.result["export"], indent=2), content_type="application/json")
        response["Content-Disposition"] = 'attachment; filename="realm-export.json"'
        return response


def _posted(request):
    """A form's data and files: bound on POST (even an empty one: no box ticked), else unbound."""
    return (request.POST, request.FILES) if request.method == "POST" else (None, None)


def _may_create_realm(request):
    return admin.site.get_model_admin(Realm).has_add_permission(request)


def _counts_of(job):
    """(label, number) pairs of what a finished job did."""
    result = job.result or {}
    if job.kind == ConsoleJob.REALM_IMPORT:
        keys = (("users", "Users"), ("clients", "Clients"), ("roles", "Roles"), ("groups", "Groups"))
    elif job.kind == ConsoleJob.PARTIAL_IMPORT:
        keys = (("added", "Added"), ("skipped", "Skipped"), ("overwritten", "Overwritten"))
    else:
        keys = ()
    return [(label, result[key]) for key, label in keys if key in result]
