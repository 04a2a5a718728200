"""Organizations (Keycloak 26), shown while the current realm has its "Organizations" switch on:
each with its domains and members, and an "Invite by e-mail" page sending the invitation
(``realms.users.organizations.invite``). Governed by ``manage-realm``, as the Admin API."""
from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.http import Http404, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from ..models import Organization, OrganizationDomain, OrganizationMember, User
from ..users import organizations
from .audit import admin_event
from .base import ConsoleAdmin, RealmScopedInline, realm_owned_list_filter
from .switcher import current_realm


class OrganizationForm(forms.ModelForm):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["alias"].required = False
        self.fields["alias"].help_text = "Defaults to the name; it cannot be changed afterwards."
        if self.instance.pk:
            self.fields["alias"].disabled = True

    def clean(self):
        data = super().clean()
        if data.get("alias") and any(c.isspace() for c in data["alias"]) and "alias" in self.changed_data:
            self.add_error("alias", "Empty Space not allowed.")
        elif data.get("name") and not data.get("alias"):  # as Keycloak: the name, spaces and all
            data["alias"] = self.instance.alias = data["name"]
        return data


class DomainForm(forms.ModelForm):
    realm = None  # set by DomainInline.get_formset

    def clean_name(self):
        name = self.cleaned_data["name"].strip().lower()
        taken = OrganizationDomain.objects.filter(realm=self.realm, name=name)
        if self.instance.organization_id:
            taken = taken.exclude(organization_id=self.instance.organization_id)
        if taken.exists():
            raise ValidationError(f"Domain {name} is already linked to another organization in realm {self.realm.name}")
        return name


class DomainInline(RealmScopedInline):
    model = OrganizationDomain
    form = DomainForm
    fields = ("name", "verified")

    def get_formset(self, request, obj=None, **kwargs):
        formset = super().get_formset(request, obj, **kwargs)
        formset.form.realm = self.form_realm(request)
        return formset


class MemberInline(RealmScopedInline):
    model = OrganizationMember
    fields = ("user", "membership_type")
    autocomplete_fields = ("user",)  # a realm may hold too many users for one select


class InviteForm(forms.Form):
    email = forms.EmailField()
    first_name = forms.CharField(required=False, label="First name")
    last_name = forms.CharField(required=False, label="Last name")


@admin.register(Organization)
class OrganizationAdmin(ConsoleAdmin):
    view_role, manage_role = "manage-realm", "manage-realm"
    form = OrganizationForm
    list_display = ("name", "alias", "enabled", "domain_names", "member_count")
    list_filter = realm_owned_list_filter()
    search_fields = ("name", "alias", "domains__name")
    fields = ("realm", "name", "alias", "enabled", "description", "redirect_url", "attributes")
    readonly_fields = ("invite",)
    inlines = [DomainInline, MemberInline]

    def get_fields(self, request, obj=None):
        return self.fields + (("invite",) if obj is not None else ())

    @admin.display(description="")
    def invite(self, obj):
        return format_html('<a id="org-invite" href="{}">Invite by e-mail</a>',
                           reverse("admin:realms_organization_invite", args=[obj.pk]))

    def _switched_on(self, request, obj=None):
        realm = obj.realm if obj is not None else current_realm(request)
        return realm is not None and realm.organizations_enabled

    def has_module_permission(self, request):
        return super().has_module_permission(request) and self._switched_on(request)

    def may(self, request, role, obj=None):
        return self._switched_on(request, obj) and super().may(request, role, obj)

    @admin.display(description="domains")
    def domain_names(self, obj):
        return ", ".join(d.name for d in obj.domains.all())

    @admin.display(description="members")
    def member_count(self, obj):
        return obj.memberships.count()

    def get_urls(self):
        return [path("<path:object_id>/invite/", self.admin_site.admin_view(self.invite_view),
                     name="realms_organization_invite"), *super().get_urls()]

    def invite_view(self, request, object_id):
        org = self.get_object(request, object_id)
        if org is None:
            raise Http404("No such organization.")
        if not self.has_change_permission(request, org):
            raise PermissionDenied
        form = InviteForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            user = User.objects.filter(realm=org.realm, email__iexact=data["email"]).first()
            named = bool(data["first_name"] and data["last_name"])
            user = user or User(realm=org.realm, email=data["email"], attributes={},
                                first_name=data["first_name"] if named else "",
                                last_name=data["last_name"] if named else "")
            if not user._state.adding and organizations.membership(org, user.pk):
                form.add_error("email", "User already a member of the organization")
            else:
                try:
                    with transaction.atomic():
                        organizations.invite(org, user, request)
                        admin_event(request, org.realm, "ACTION", "ORGANIZATION_MEMBERSHIP",
                                    f"organizations/{org.pk}/members/invite-user")
                except organizations.InvitationNotSent:
                    form.add_error(None, "Failed to send invite email")
                else:
                    self.message_user(request, f"Invitation sent to {data['email']}.", messages.SUCCESS)
                    return HttpResponseRedirect(reverse("admin:realms_organization_change", args=[org.pk]))
        context = {**self.admin_site.each_context(request), "title": f"Invite to {org.name}", "form": form,
                   "opts": self.opts, "original": org,
                   "adminform": admin.helpers.AdminForm(form, [(None, {"fields": list(form.base_fields)})], {})}
        return TemplateResponse(request, "admin/realms/authenticationflow/tool.html", context)

    def delete_model(self, request, obj):
        # As the Admin API: the members the organization provisioned go with it.
        User.objects.filter(organization_memberships__organization=obj,
                            organization_memberships__membership_type=OrganizationMember.MANAGED).delete()
        super().delete_model(request, obj)
