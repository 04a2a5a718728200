"""Authentication: a realm's flows (copy, add and remove steps and sub-flows, each requirement
as a choice, bind to the realm or to one client), the settings of their steps (conditions) and
the realm's required actions. Changes follow ``realms.administration.flow_admin``'s rules, as the Admin API."""
from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.http import Http404, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from ..administration import flow_admin
from ..administration.admin_permissions import console_admin, visible
from ..administration.flow_admin import FlowError
from ..models import AuthenticationExecution, AuthenticationFlow, AuthenticatorConfig, Client, RequiredActionProvider
from ..signin import flows
from ..users import actions
from .audit import object_event
from .base import ConsoleAdmin, RealmScopedInline, realm_owned_list_filter
from .navigation import default_filter


def _step_choices():
    return [("", "—")] + [(a.provider_id, f"{a.display_name or a.provider_id} ({a.provider_id})")
                          for a in flows.authenticators()]


class ExecutionForm(forms.ModelForm):
    """One row of a flow: a new row picks a registered step; an existing row's step is fixed
    (as in Keycloak), its requirement is a choice."""

    authenticator = forms.ChoiceField(required=False, label="Step")

    class Meta:
        model = AuthenticationExecution
        fields = ("authenticator", "requirement", "priority", "authenticator_config")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        choices = _step_choices()
        existing = not self.instance._state.adding  # (ids are set before saving: pk tells nothing)
        if existing and self.instance.authenticator not in dict(choices):
            choices.append((self.instance.authenticator, f"{self.instance.authenticator} (not available here)"))
        self.fields["authenticator"].choices = choices
        self.fields["authenticator"].disabled = existing

    def clean(self):
        data = super().clean()
        if self.instance._state.adding and not data.get("authenticator") and not data.get("DELETE"):
            raise ValidationError("Choose a step (sub-flows are added with “Add sub-flow”).")
        return data


class ExecutionInline(RealmScopedInline):
    model = AuthenticationExecution
    fk_name = "flow"
    form = ExecutionForm
    fields = ("authenticator", "sub_flow_link", "requirement", "priority", "authenticator_config")
    readonly_fields = ("sub_flow_link",)
    ordering = ("priority", "id")

    @admin.display(description="sub-flow")
    def sub_flow_link(self, obj):
        if not obj.sub_flow_id:
            return ""
        return format_html('<a href="{}">{}</a>', reverse("admin:realms_authenticationflow_change",
                                                          args=[obj.sub_flow_id]), obj.sub_flow.alias)

    def get_readonly_fields(self, request, obj=None):
        # Built-in flows keep their steps and order (Keycloak's rule); requirements still change.
        return (*self.readonly_fields, "priority") if obj is not None and obj.built_in else self.readonly_fields

    def has_add_permission(self, request, obj=None):
        return obj is not None and not obj.built_in and super().has_add_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        return obj is not None and not obj.built_in and super().has_delete_permission(request, obj)


class CopyForm(forms.Form):
    new_name = forms.CharField(max_length=255, label="Name of the copy")


class SubFlowForm(forms.Form):
    alias = forms.CharField(max_length=255)
    type = forms.ChoiceField(choices=AuthenticationFlow.PROVIDERS, initial=AuthenticationFlow.BASIC)
    provider = forms.CharField(max_length=255, required=False,
                               help_text="A form flow's form (e.g. registration-page-form).")
    description = forms.CharField(max_length=1000, required=False)


REALM_BINDINGS = [
    ("", "—"), ("browser_flow", "Browser flow"), ("registration_flow", "Registration flow"),
    ("direct_grant_flow", "Direct grant flow"), ("reset_credentials_flow", "Reset credentials flow"),
    ("client_authentication_flow", "Client authentication flow"),
]  # Docker's and the first broker login's bindings run nothing here yet: not offered


class BindForm(forms.Form):
    realm_binding = forms.ChoiceField(choices=REALM_BINDINGS, required=False, label="Bind to the realm as")
    client = forms.ModelChoiceField(queryset=Client.objects.none(), required=False,
                                    label="Or override for one client")
    client_binding = forms.ChoiceField(choices=[("browser", "Browser flow"), ("direct_grant", "Direct grant flow")],
                                       required=False, label="Client's binding")

    def __init__(self, clients, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["client"].queryset = clients

    def clean(self):
        data = super().clean()
        if not data.get("realm_binding") and not data.get("client"):
            raise ValidationError("Choose a binding of the realm or a client.")
        return data


@admin.register(AuthenticationFlow)
class AuthenticationFlowAdmin(ConsoleAdmin):
    list_display = ("alias", "used_by", "description", "built_in")
    list_filter = realm_owned_list_filter("top_level", "built_in")
    search_fields = ("alias", "description")
    ordering = ("alias",)
    inlines = (ExecutionInline,)

    def changelist_view(self, request, extra_context=None):
        # Keycloak lists the top-level flows; sub-flows are reached from their flow, or with the filter.
        return default_filter(request, top_level__exact="1") or super().changelist_view(request, extra_context)

    def get_fields(self, request, obj=None):
        if obj is None:
            return ("realm", "alias", "description", "provider_id", "top_level")
        return ("realm", "alias", "description", "provider_id", "top_level", "built_in", "used_by", "tools")

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return ()
        fixed = ("provider_id", "top_level", "built_in", "used_by", "tools")
        return ("alias", *fixed) if obj.built_in else fixed

    @admin.display(description="Used by")
    def used_by(self, obj):
        """As Keycloak says it: the realm's bindings by name ("Browser flow"), clients by their id."""
        if not obj.top_level:
            return "Sub-flow"
        names = dict(REALM_BINDINGS)
        uses = [names.get(use) or use[:1].upper() + use[1:] for use in flow_admin.bound_as(obj.realm, obj)]
        return ", ".join(uses) or "Not in use"

    @admin.display(description="")
    def tools(self, obj):
        links = [("copy", "Copy"), ("bind", "Bind")] if obj.top_level else [("copy", "Copy")]
        if not obj.built_in:
            links.append(("sub-flow", "Add sub-flow"))
        return format_html_join(" · ", '<a href="{}">{}</a>', (
            (reverse(f"admin:realms_authenticationflow_{name.replace('-', '_')}", args=[obj.pk]), label)
            for name, label in links))

    def has_delete_permission(self, request, obj=None):
        return (obj is None or not obj.built_in) and super().has_delete_permission(request, obj)

    def save_model(self, request, obj, form, change):
        if change and "alias" in form.changed_data:
            new_alias, obj.alias = obj.alias, form.initial["alias"]
            flow_admin.rename_flow(obj.realm, obj, new_alias, obj.description)  # bindings follow the flow
        super().save_model(request, obj, form, change)

    def save_formset(self, request, form, formset, change):
        removed = [f.instance for f in formset.deleted_forms if not f.instance._state.adding]
        super().save_formset(request, form, formset, change)
        # A removed row's sub-flow and config go with it, as Keycloak's deep delete.
        flow_admin.delete_unused(form.instance.realm, {e.sub_flow_id for e in removed if e.sub_flow_id},
                                 {e.authenticator_config_id for e in removed if e.authenticator_config_id})

    def delete_model(self, request, obj):
        try:
            flow_admin.delete_flow(obj.realm, obj)
        except FlowError as exc:
            self.message_user(request, exc.message, messages.ERROR)
            return
        self.change_event(request, "DELETE", obj)

    def delete_queryset(self, request, queryset):
        for obj in queryset:
            self.delete_model(request, obj)

    def get_urls(self):
        view = self.admin_site.admin_view
        return [
            path("<path:object_id>/copy/", view(self.copy_view), name="realms_authenticationflow_copy"),
            path("<path:object_id>/bind/", view(self.bind_view), name="realms_authenticationflow_bind"),
            path("<path:object_id>/sub-flow/", view(self.sub_flow_view), name="realms_authenticationflow_sub_flow"),
            *super().get_urls(),
        ]

    def _flow(self, request, object_id):
        flow = self.get_object(request, object_id)
        if flow is None:
            raise Http404("No such flow.")
        if not self.has_change_permission(request, flow):
            raise PermissionDenied
        return flow

    def _page(self, request, flow, title, form):
        context = {**self.admin_site.each_context(request), "title": title, "form": form, "opts": self.opts,
                   "original": flow,
                   "adminform": admin.helpers.AdminForm(form, [(None, {"fields": list(form.base_fields)})], {})}
        return TemplateResponse(request, "admin/realms/authenticationflow/tool.html", context)

    def _done(self, request, flow, message):
        self.message_user(request, message, messages.SUCCESS)
        return HttpResponseRedirect(reverse("admin:realms_authenticationflow_change", args=[flow.pk]))

    def copy_view(self, request, object_id):
        flow = self._flow(request, object_id)
        form = CopyForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            try:
                with transaction.atomic():
                    copy = flow_admin.copy_flow(flow.realm, flow, form.cleaned_data["new_name"])
                    object_event(request, "CREATE", copy)
            except FlowError as exc:
                form.add_error("new_name", exc.message)
            else:
                return self._done(request, copy, f"Copied {flow.alias} to {copy.alias}.")
        return self._page(request, flow, f"Copy flow: {flow.alias}", form)

    def sub_flow_view(self, request, object_id):
        flow = self._flow(request, object_id)
        form = SubFlowForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            try:
                with transaction.atomic():
                    sub, execution = flow_admin.add_sub_flow(flow.realm, flow, data["alias"], data["type"],
                                                             data["provider"], data["description"])
                    object_event(request, "CREATE", execution)
            except FlowError as exc:
                form.add_error("alias", exc.message)
            else:
                return self._done(request, flow,
                                  f"Added sub-flow {sub.alias} (disabled until you set its requirement).")
        return self._page(request, flow, f"Add sub-flow to {flow.alias}", form)

    def bind_view(self, request, object_id):
        flow = self._flow(request, object_id)
        # A client's override changes the client: offered are the clients the admin may manage.
        clients = visible(console_admin(request), flow.realm, "Clients",
                          Client.objects.filter(realm=flow.realm).order_by("client_id"), ("manage",))
        form = BindForm(clients, request.POST or None)
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            try:
                with transaction.atomic():
                    if data["realm_binding"]:
                        flow_admin.bind(flow.realm, data["realm_binding"], flow)
                        object_event(request, "UPDATE", flow.realm)
                    if data["client"] is not None:
                        flow_admin.override(data["client"], data["client_binding"] or "browser", flow)
                        object_event(request, "UPDATE", data["client"])
            except FlowError as exc:
                form.add_error(None, exc.message)
            else:
                return self._done(request, flow, f"Bound {flow.alias}.")
        return self._page(request, flow, f"Bind flow: {flow.alias}", form)


def _properties(config):
    """The settings the step using ``config`` describes (its ``config_properties``), if any."""
    execution = config.executions.first() if config is not None and not config._state.adding else None
    auth = flows.get_authenticator(execution.authenticator) if execution is not None else None
    return tuple(getattr(auth, "config_properties", ()))


def _property_field(prop):
    if prop.get("type") == "boolean":
        return forms.BooleanField(required=False, label=prop["label"], help_text=prop.get("helpText", ""))
    return forms.CharField(required=False, label=prop["label"], help_text=prop.get("helpText", ""))


class AuthenticatorConfigForm(forms.ModelForm):
    """A step's settings: one field per setting the step describes (the conditions), else the
    map itself."""

    properties = ()

    class Meta:
        model = AuthenticatorConfig
        fields = ("realm", "alias", "config")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        current = self.instance.config or {}
        for prop in self.properties:
            value = current.get(prop["name"], prop.get("defaultValue", ""))
            self.fields[f"prop_{prop['name']}"].initial = (
                str(value).lower() == "true" if prop.get("type") == "boolean" else value)

    def clean(self):
        data = super().clean()
        if self.properties:
            config = dict(self.instance.config or {})
            for prop in self.properties:
                value = data.get(f"prop_{prop['name']}")
                config[prop["name"]] = ("true" if value else "false") if prop.get("type") == "boolean" else value or ""
            data["config"] = config
        elif not isinstance(data.get("config"), dict) or not all(
                isinstance(v, str) for v in data.get("config", {}).values()):
            raise ValidationError("The settings are an object of strings.")
        return data

    def save(self, commit=True):
        self.instance.config = self.cleaned_data["config"]
        return super().save(commit)


@admin.register(AuthenticatorConfig)
class AuthenticatorConfigAdmin(ConsoleAdmin):
    """Settings of a flow's step (a condition's role, attribute or level ...)."""

    form = AuthenticatorConfigForm
    list_display = ("alias", "used_by")
    list_filter = realm_owned_list_filter()
    search_fields = ("alias",)

    def get_fields(self, request, obj=None):
        properties = _properties(obj)
        if properties:
            return ("realm", "alias", *(f"prop_{p['name']}" for p in properties))
        return ("realm", "alias", "config")

    def get_form(self, request, obj=None, change=False, **kwargs):
        properties = _properties(obj)
        declared = {f"prop_{p['name']}": _property_field(p) for p in properties}
        kwargs["form"] = type("StepSettingsForm", (AuthenticatorConfigForm,), {**declared, "properties": properties})
        return super().get_form(request, obj, change=change, **kwargs)

    @admin.display(description="used by")
    def used_by(self, obj):
        return ", ".join(f"{e.flow.alias}: {e.authenticator}" for e in obj.executions.select_related("flow"))


@admin.register(RequiredActionProvider)
class RequiredActionProviderAdmin(ConsoleAdmin):
    """The realm's required actions: enabled (asked for), default (given to new users), order."""

    list_display = ("name", "alias", "enabled", "default_action", "priority", "available")
    list_editable = ("enabled", "default_action", "priority")
    list_filter = realm_owned_list_filter("enabled", "default_action")
    fields = ("realm", "alias", "name", "provider_id", "enabled", "default_action", "priority", "config")

    @admin.display(boolean=True, description="implemented here")
    def available(self, obj):
        return actions.get_required_action(obj.provider_id) is not None
