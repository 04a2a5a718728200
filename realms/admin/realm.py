"""Realms: settings (in Keycloak's console sections), default client scopes, keys (read-only),
signing-key rotation and the realm switcher's view."""
from django import forms
from django.contrib import admin, messages
from django.contrib.admin.templatetags.admin_urls import add_preserved_filters
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import HttpResponseNotAllowed, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.templatetags.static import static
from django.urls import path, reverse
from django.utils.html import escape, format_html
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _

from .. import features
from ..administration.admin_permissions import administered_realms, console_admin, grant_delegated_admin
from ..credentials import password_policy
from ..data import keys
from ..http import email
from ..models import AuthenticationFlow, Event, Realm, RealmDefaultClientScope, RealmKey, UserSession, has_realm_role
from ..representation import RepresentationError
from ..representation import client_policies as cp
from ..representation.authorization import permissions_client
from ..representation.services import create_realm
from ..signin import flows
from ..sso import sessions
from .audit import admin_event, object_event
from .base import ConsoleAdmin, RealmScopedInline, adopt
from .keyed import KeyedJsonForm, keyed_form
from .names import time_column
from .realm_settings import (
    CIBA,
    CIMD,
    HEADERS,
    OTP,
    SMTP,
    SSF,
    WEBAUTHN,
    PasswordPolicyField,
    RealmTextsField,
    event_type_choices,
    locale_choices,
    validate_headers,
    validate_smtp,
)
from .sessions import back, logout_all_button, post_button, sessions_table, signout_session_view
from .switcher import REALM_PARAM, set_current_realm


class RealmKeyInline(admin.TabularInline):
    """The realm's keys, read-only here (Keys tab); add or edit them under Realm keys."""

    model = RealmKey
    classes = ("tab-keys",)
    fields = readonly_fields = ("kid", "algorithm", "status", "priority", "provider_name", "created_at")
    show_change_link = True
    extra = 0
    can_delete = False
    created_at = time_column("created", "Created")

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class RealmDefaultClientScopeInline(RealmScopedInline):
    model = RealmDefaultClientScope
    classes = ("tab-client-scopes",)
    fields = ("client_scope", "default")
    verbose_name = "default client scope"
    verbose_name_plural = "Default client scopes (given to new clients: default, or optional when unticked)"


def theme_choices():
    """Themes are the template folders with a message bundle; empty: the built-in ``v2``."""
    from ..http.messages import _template_dirs

    names = {d.name for base in _template_dirs() for d in base.iterdir() if (d / "messages").is_dir()}
    return [("", "(default)")] + [(n, n) for n in sorted(names)]


# The realm's flow bindings a person chooses among the realm's top-level flows (the client
# authentication binding is the built-in "clients" flow only: its model field offers that one).
FLOW_BINDINGS = {"browser_flow": "Browser flow", "registration_flow": "Registration flow",
                 "direct_grant_flow": "Direct grant flow", "reset_credentials_flow": "Reset credentials flow"}


def flow_aliases(realm):
    """The top-level basic flows a binding may name: the realm's, or for a new realm the
    built-in ones it will get."""
    if realm is None or realm._state.adding:
        return [f.alias for f in flows.BUILTIN_FLOWS if f.provider_id == AuthenticationFlow.BASIC]
    return list(AuthenticationFlow.objects.filter(realm=realm, top_level=True, provider_id=AuthenticationFlow.BASIC)
                .order_by("alias").values_list("alias", flat=True))


class RealmFormBase(KeyedJsonForm):
    browser_flow = forms.ChoiceField(label=FLOW_BINDINGS["browser_flow"])
    registration_flow = forms.ChoiceField(label=FLOW_BINDINGS["registration_flow"])
    direct_grant_flow = forms.ChoiceField(label=FLOW_BINDINGS["direct_grant_flow"])
    reset_credentials_flow = forms.ChoiceField(label=FLOW_BINDINGS["reset_credentials_flow"])
    password_policy = PasswordPolicyField(required=False, label="Password policy", help_text=(
        "Each policy once; a new password must meet them all. Stored as Keycloak's policy string."))
    default_signature_algorithm = forms.ChoiceField(choices=RealmKey.ALGORITHMS, initial="RS256")
    login_theme = forms.ChoiceField(choices=theme_choices, initial="v2", label="Login theme")
    account_theme = forms.ChoiceField(choices=theme_choices, required=False, label="Account theme")
    email_theme = forms.ChoiceField(choices=theme_choices, required=False, label="Email theme")
    supported_locales = forms.MultipleChoiceField(
        choices=locale_choices, required=False, widget=forms.CheckboxSelectMultiple)
    default_locale = forms.ChoiceField(choices=lambda: [("", "(English)"), *locale_choices()],
                                       required=False)
    localization_texts = RealmTextsField(
        required=False, label="Realm texts",
        help_text="Realm overrides of the theme's texts, one per line as locale:key=text.")
    enabled_event_types = forms.MultipleChoiceField(
        choices=event_type_choices, required=False, label="Saved types",
        widget=admin.widgets.FilteredSelectMultiple("event types", is_stacked=False),
        help_text="None chosen: every type is saved.")
    # Keycloak's Client policies tab, as its JSON editors: the documents of the Admin API's
    # client-policies/profiles and /policies, checked the same way.
    client_profiles = forms.JSONField(
        required=False, label="Profiles", widget=forms.Textarea(attrs={"rows": 14, "cols": 100}),
        help_text='{"profiles": [{"name": ..., "executors": [{"executor": ..., "configuration": {...}}]}]}; '
                  "the global profiles (fapi-2-security-profile...) may be named by policies as they are.")
    client_policies = forms.JSONField(
        required=False, label="Policies", widget=forms.Textarea(attrs={"rows": 14, "cols": 100}),
        help_text='{"policies": [{"name": ..., "enabled": true, "conditions": [{"condition": ..., '
                  '"configuration": {...}}], "profiles": [...]}]}')

    class Meta:
        # Keycloak's console names, where the field name alone reads poorly; durations in seconds.
        labels = {
            "ssl_required": "Require SSL",
            "display_name_html": "HTML display name",
            "user_managed_access_allowed": "User-managed access",
            "sso_session_idle_timeout": "SSO Session Idle (s)",
            "sso_session_max_lifespan": "SSO Session Max (s)",
            "sso_session_idle_timeout_remember_me": "SSO Session Idle Remember Me (s)",
            "sso_session_max_lifespan_remember_me": "SSO Session Max Remember Me (s)",
            "client_session_idle_timeout": "Client Session Idle (s)",
            "client_session_max_lifespan": "Client Session Max (s)",
            "offline_session_idle_timeout": "Offline Session Idle (s)",
            "offline_session_max_lifespan": "Offline Session Max (s)",
            "client_offline_session_idle_timeout": "Client Offline Session Idle (s)",
            "client_offline_session_max_lifespan": "Client Offline Session Max (s)",
            "access_token_lifespan": "Access Token Lifespan (s)",
            "access_token_lifespan_for_implicit_flow": "Access Token Lifespan For Implicit Flow (s)",
            "access_code_lifespan": "Client login timeout (s)",
            "access_code_lifespan_user_action": "Login action timeout (s)",
            "access_code_lifespan_login": "Login timeout (s)",
            "action_token_generated_by_admin_lifespan": "Default admin-initiated action lifespan (s)",
            "action_token_generated_by_user_lifespan": "User-initiated action lifespan (s)",
            "oauth2_device_code_lifespan": "OAuth 2.0 Device Code Lifespan (s)",
            "oauth2_device_polling_interval": "OAuth 2.0 Device Polling Interval (s)",
            "events_expiration": "Expiration (s)",
            "admin_events_details_enabled": "Include representation",
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if "scim_api_enabled" in self.fields:
            # The admin shows help text as HTML: the model's "<realm>" would vanish as a tag.
            name = "<realm name>" if self.instance._state.adding else self.instance.name
            self.fields["scim_api_enabled"].help_text = escape(f"SCIM 2.0 provisioning below /realms/{name}/scim/v2.")
        if "client_policies" in self.fields:
            attributes = self.instance.attributes
            self.initial["client_profiles"] = cp.stored_profiles(attributes)
            self.initial["client_policies"] = cp.stored_policies(attributes)
        if "attributes" in self.fields:  # the two holding the documents are edited above, not here
            self.initial["attributes"] = cp.plain_attributes(self.instance.attributes)
        aliases = flow_aliases(self.instance)
        for name in FLOW_BINDINGS:
            if name in self.fields:
                # A bound alias whose flow is gone stays on offer, marked, so the form says so.
                current = getattr(self.instance, name)
                missing = [(current, f"{current} (no such flow)")] if current and current not in aliases else []
                self.fields[name].choices = [*((a, a) for a in aliases), *missing]
                self.fields[name].initial = current  # a new realm's form: the model's default

    def clean(self):
        cleaned = super().clean()
        aliases = flow_aliases(self.instance)
        for name in FLOW_BINDINGS:  # a missing flow left bound is marked on the page, not refused
            if name in cleaned and name in self.changed_data and cleaned[name] not in aliases:
                self.add_error(name, f"The realm has no top-level flow {cleaned[name]}: choose one of its flows.")
        for problems in (validate_smtp(cleaned), validate_headers(cleaned)):
            for name, message in problems.items():
                self.add_error(name, message)
        default, supported = cleaned.get("default_locale"), cleaned.get("supported_locales") or []
        if cleaned.get("internationalization_enabled"):
            if not supported:
                self.add_error("supported_locales", "Choose at least one locale, or turn internationalization off.")
            elif default and default not in supported:
                self.add_error("default_locale", "The default locale must be one of the supported locales.")
        for name in ("webauthn_signature_algorithms", "passwordless_signature_algorithms"):
            if name in self.fields and not cleaned.get(name) and name not in self.errors:
                self.add_error(name, "Choose at least one signature algorithm.")
        if "attributes" in cleaned:
            attributes = cp.with_reserved(cleaned["attributes"], self.instance.attributes)
            if "client_policies" in self.fields:
                attributes = self._client_policies(cleaned, attributes)
            cleaned["attributes"] = attributes
        return cleaned

    def _client_policies(self, cleaned, attributes):
        """The attributes with the two documents written in, or unchanged with the refusal on the
        field that caused it."""
        if "client_profiles" not in cleaned or "client_policies" not in cleaned:
            return attributes  # not JSON: the field says so
        try:
            profiles = cp.parse_profiles(cleaned["client_profiles"] or {"profiles": []})
        except RepresentationError as exc:
            self.add_error("client_profiles", str(exc))
            return attributes
        try:
            policies = cp.parse_policies(cleaned["client_policies"] or {"policies": []}, "",
                                         [p["name"] for p in profiles["profiles"]])
        except RepresentationError as exc:
            self.add_error("client_policies", str(exc))
            return attributes
        return cp.store(attributes, policies, profiles)

    def clean_password_policy(self):
        value = self.cleaned_data["password_policy"]
        try:
            password_policy.parse(value)
        except password_policy.PolicyConfigError as exc:
            raise forms.ValidationError(str(exc)) from None
        return value


RealmForm = keyed_form("RealmForm", RealmFormBase, {
    **SMTP, **OTP, **WEBAUTHN, **HEADERS, **CIBA, **CIMD, **SSF})


# The realm list's cells as Django's admin writes the columns of ``list_display``; a page joins
# them into one format string a row (RealmAdmin.result_rows). Django's ``items_for_result`` cost
# about 0.5 ms a row (a checkbox widget's templates, two reverse() and a static() call, a
# format_html a cell): a full page of ten was 25-45 % dearer than one row (decision 0123).
COLUMNS = {
    "action_checkbox": '<td class="action-checkbox"><input type="checkbox" name="_selected_action" value="{pk}"'
                       ' class="action-select" aria-label="{label}"></td>',
    "name": '<th class="field-name"><a href="{change}"{popup}>{name}</a></th>',
    "display_name": '<td class="field-display_name">{display_name}</td>',
    "enabled": '<td class="field-enabled"><img src="{icon}" alt="{enabled}"></td>',
    "work_in_realm": '<td class="field-work_in_realm"><a href="{manage}{pk}">Manage this realm</a></td>',
}


def _tab(slug, title, fields, **options):
    return (title, {"fields": fields, "classes": (f"tab-{slug}", *options.pop("classes", ())), **options})


@admin.register(Realm)
class RealmAdmin(ConsoleAdmin):
    form = RealmForm
    change_form_template = "admin/realms/realm/change_form.html"  # partial import and export
    change_list_template = "admin/realms/realm/change_list.html"  # realm import
    list_per_page = 10  # Keycloak 26's realm table: ten a page, searched by name
    list_display = ("name", "display_name", "enabled", "work_in_realm")
    search_fields = ("name", "display_name")
    actions = ["rotate_signing_key"]
    readonly_fields = ("id", "created_at", "sessions", "logout_all", "smtp_test")
    created_at = time_column("created", "Created", realm=lambda realm: realm)
    # Keycloak's realm settings tabs, then its Authentication policies and the realm's client scopes.
    # Not shown until something acts on them: event listeners, the docker and first-broker-login
    # flow bindings, required credentials (identity brokering and docker do not exist here yet;
    # the values are kept and exported as imported).
    tabs = (("general", "General"), ("login", "Login"), ("email", "Email"), ("themes", "Themes"),
            ("keys", "Keys"), ("events", "Events"), ("localization", "Localization"),
            ("security", "Security defenses"), ("sessions", "Sessions"), ("tokens", "Tokens"),
            ("authentication", "Authentication policies"), ("client-policies", "Client policies"),
            ("client-scopes", "Client scopes"), ("advanced", "Advanced"))

    fieldsets = [
        _tab("general", "General", ("name", "display_name", "display_name_html", "enabled", "ssl_required",
                                    "user_managed_access_allowed", "organizations_enabled",
                                    "admin_permissions_enabled")),
        _tab("login", "Login screen customization and email settings", (
            "registration_allowed", "registration_email_as_username", "remember_me", "verify_email",
            "login_with_email_allowed", "duplicate_emails_allowed", "reset_password_allowed",
            "edit_username_allowed", "passkeys_enabled", "scim_api_enabled",
        )),
        _tab("email", "Template", ("smtp_from", "smtp_from_display_name", "smtp_reply_to",
                                   "smtp_reply_to_display_name", "smtp_envelope_from")),
        _tab("email", "Connection and authentication", ("smtp_host", "smtp_port", "smtp_ssl", "smtp_starttls",
                                                        "smtp_auth", "smtp_user", "smtp_password", "smtp_test")),
        _tab("themes", "Themes", ("login_theme", "account_theme", "email_theme")),
        _tab("events", "User events settings", ("events_enabled", "events_expiration", "enabled_event_types")),
        _tab("events", "Admin events settings", ("admin_events_enabled", "admin_events_details_enabled")),
        _tab("localization", "Localization", ("internationalization_enabled", "supported_locales", "default_locale",
                                              "localization_texts")),
        _tab("security", "Headers", tuple(HEADERS)),
        _tab("security", "Brute force detection", (
            "brute_force_protected", "permanent_lockout", "max_temporary_lockouts", "max_failure_wait_seconds",
            "minimum_quick_login_wait_seconds", "wait_increment_seconds", "quick_login_check_milli_seconds",
            "max_delta_time_seconds", "failure_factor",
        )),
        _tab("sessions", "SSO Session Settings", (
            "sso_session_idle_timeout", "sso_session_max_lifespan", "sso_session_idle_timeout_remember_me",
            "sso_session_max_lifespan_remember_me")),
        _tab("sessions", "Client session settings", ("client_session_idle_timeout", "client_session_max_lifespan")),
        _tab("sessions", "Offline session settings", (
            "offline_session_idle_timeout", "offline_session_max_lifespan_enabled", "offline_session_max_lifespan",
            "client_offline_session_idle_timeout", "client_offline_session_max_lifespan",
        )),
        _tab("sessions", "Active sessions", ("sessions", "logout_all")),
        _tab("tokens", "Tokens", (
            "default_signature_algorithm", "revoke_refresh_token", "refresh_token_max_reuse",
            "access_token_lifespan", "access_token_lifespan_for_implicit_flow", "access_code_lifespan",
            "access_code_lifespan_user_action", "access_code_lifespan_login",
            "action_token_generated_by_admin_lifespan", "action_token_generated_by_user_lifespan",
            "oauth2_device_code_lifespan", "oauth2_device_polling_interval", "not_before",
        )),
        _tab("authentication", "Password policy", ("password_policy",)),
        _tab("authentication", "OTP policy", tuple(OTP)),
        _tab("authentication", "Webauthn Policy", tuple(k for k in WEBAUTHN if k.startswith("webauthn_"))),
        _tab("authentication", "Webauthn Passwordless Policy", tuple(k for k in WEBAUTHN if k.startswith("passwordless_"))),
        _tab("authentication", "CIBA Policy", tuple(CIBA)),
        _tab("authentication", "Client ID Metadata Documents", tuple(CIMD)),
        _tab("authentication", "Shared Signals", tuple(SSF)),
        _tab("authentication", "Flow bindings", (
            "browser_flow", "registration_flow", "direct_grant_flow", "reset_credentials_flow",
            "client_authentication_flow",
        )),
        _tab("client-policies", "Client policies", ("client_profiles", "client_policies")),
        _tab("advanced", "Advanced", ("default_role", "attributes", "id", "created_at")),
    ]

    def get_fieldsets(self, request, obj=None):
        # The client id metadata document policy and the Shared Signals settings do nothing while
        # their feature is off: not shown.
        hidden = {tuple(CIMD): "client-id-metadata-document", tuple(SSF): "ssf"}
        fieldsets = [(name, opts) for name, opts in self.fieldsets
                     if opts["fields"] not in hidden or features.enabled(hidden[opts["fields"]])]
        if obj is None:  # the default role, ids and sessions come with create_realm
            return [(name, {**opts, "fields": tuple(f for f in opts["fields"] if f not in (
                "default_role", "id", "created_at", "sessions", "logout_all"))})
                    for name, opts in fieldsets if opts["fields"] != ("sessions", "logout_all")]
        return fieldsets

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        if not features.enabled("ssf"):  # a declared field no section shows would still be saved
            for name in SSF:
                form.base_fields.pop(name, None)
        return form

    def get_readonly_fields(self, request, obj=None):
        if obj is not None and obj.is_master:
            return (*self.readonly_fields, "name")  # the console itself signs in through master
        return self.readonly_fields

    def get_inlines(self, request, obj):
        return [RealmDefaultClientScopeInline, RealmKeyInline] if obj is not None else []

    def get_queryset(self, request):
        realms = super().get_queryset(request)
        if request.user.is_superuser:
            return realms
        return realms.filter(pk__in=[r.pk for r in administered_realms(console_admin(request))])

    def has_add_permission(self, request):
        user = request.user
        return user.is_superuser or (user.realm.is_master and has_realm_role(user, "create-realm"))

    def has_delete_permission(self, request, obj=None):
        if obj is not None and obj.is_master:
            return False
        return super().has_delete_permission(request, obj)

    def get_deleted_objects(self, objs, request):
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        # Stored events are read-only in the console, yet they go with their realm.
        perms_needed.discard(Event._meta.verbose_name)
        return deleted, counts, perms_needed, protected

    @admin.display(description="Sessions")
    def sessions(self, obj):
        return sessions_table(UserSession.objects.filter(realm=obj))

    @admin.display(description="Sign out")
    def logout_all(self, obj):
        return logout_all_button(reverse("admin:realms_realm_logout_all", args=[obj.pk]) + "?tab=sessions",
                                 "Sign out all active sessions")

    @admin.display(description="Test connection")
    def smtp_test(self, obj):
        if obj is None or obj.pk is None:
            return "Save the realm first."
        return post_button(reverse("admin:realms_realm_smtp_test", args=[obj.pk]) + "?tab=email",
                           "Send a test e-mail (saved settings) to my address")

    # The column as Django defines it (its header, its checks, the rendering result_rows is held
    # equal to); the list's page writes it through result_rows.
    @admin.display(description="Console")
    def work_in_realm(self, obj):
        url = reverse("admin:realms_client_changelist") + f"?{REALM_PARAM}={obj.pk}"
        return format_html('<a href="{}">Manage this realm</a>', url)

    def result_rows(self, cl):
        """The rows of the realm list (``{% realm_result_list %}``): the HTML of Django's rendering
        of ``list_display`` (a test holds them equal), with what every row shares (the links'
        prefixes, the icons, the empty value) found once a page."""
        row = "".join(COLUMNS[column] for column in cl.list_display).replace(
            "{popup}", ' data-popup-opener="{pk}"' if cl.is_popup else "")
        preserved = {"preserved_filters": cl.preserved_filters, "opts": cl.opts}
        icons = {value: static(f"admin/img/icon-{'yes' if value else 'no'}.svg") for value in (True, False)}
        manage = reverse("admin:realms_client_changelist") + f"?{REALM_PARAM}="
        label, empty = _("Select this object for an action - {}"), self.get_empty_value_display()
        return [[format_html(
            row, pk=realm.pk, label=format_html(label, realm.name), name=realm.name,
            change=add_preserved_filters(preserved, cl.url_for_result(realm)),
            display_name=realm.display_name if realm.display_name.strip() else empty,
            icon=icons[realm.enabled], enabled=realm.enabled, manage=manage)] for realm in cl.result_list]

    def save_model(self, request, obj, form, change):
        if change:
            return super().save_model(request, obj, form, change)
        model_fields = {f.name for f in Realm._meta.fields} - {"name"}
        fields = {k: v for k, v in form.cleaned_data.items() if k in model_fields}
        fields.update({spec.json_field: getattr(obj, spec.json_field) for spec in form.json_keys.values()})
        adopt(obj, create_realm(form.cleaned_data["name"], **fields))
        if not request.user.is_superuser:
            grant_delegated_admin(request.user, obj)  # a realm's creator administers it
        set_current_realm(request, obj)

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        if form.instance.admin_permissions_enabled:  # as Keycloak, the switch makes the admin-permissions client
            permissions_client(form.instance)

    @admin.action(description="Rotate signing key (new key active with a higher priority, old key passive)")
    def rotate_signing_key(self, request, queryset):
        for realm in queryset:
            with transaction.atomic():
                algorithm = realm.default_signature_algorithm
                previous = list(RealmKey.objects.filter(realm=realm, algorithm=algorithm, status=RealmKey.ACTIVE))
                new = keys.rotate_key(realm, algorithm)
                object_event(request, "CREATE", new)
                for old in previous:
                    old.refresh_from_db()
                    object_event(request, "UPDATE", old)
            self.message_user(
                request,
                f"Realm {realm.name}: new {algorithm} key {new.kid} is active with priority {new.priority}; "
                f"{len(previous)} previous key(s) now passive.",
                messages.SUCCESS,
            )

    def get_urls(self):
        return [
            path("switch/", self.admin_site.admin_view(self.switch_realm_view), name="realms_realm_switch"),
            path("sessions/<str:session_id>/signout/",
                 self.admin_site.admin_view(lambda request, session_id: signout_session_view(self, request, session_id)),
                 name="realms_realm_signout_session"),
            path("<path:object_id>/logout-all/", self.admin_site.admin_view(self.logout_all_view),
                 name="realms_realm_logout_all"),
            path("<path:object_id>/test-smtp/", self.admin_site.admin_view(self.smtp_test_view),
                 name="realms_realm_smtp_test"),
            *super().get_urls(),
        ]

    def logout_all_view(self, request, object_id):
        """Keycloak's "Sign out all active sessions" (``logout-all``): sessions end, not-before moves."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        realm = self.get_object(request, object_id)
        if realm is None or not self.has_change_permission(request, realm):
            raise PermissionDenied
        with transaction.atomic():
            sessions.logout_all(realm)
            admin_event(request, realm, "ACTION", "REALM", "logout-all")
        self.message_user(request, f"Signed out every session of realm {realm.name}.", messages.SUCCESS)
        return back(request, reverse("admin:realms_realm_change", args=[realm.pk]))

    def smtp_test_view(self, request, object_id):
        """Keycloak's "Test connection" of the Email tab: the test message through the realm's saved
        SMTP settings to the signed-in admin's address."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        realm = self.get_object(request, object_id)
        if realm is None or not self.has_change_permission(request, realm):
            raise PermissionDenied
        try:
            email.send_test(realm, realm.smtp_server or {}, request.user)
        except email.TestFailed as exc:
            self.message_user(request, str(exc), messages.ERROR)
        else:
            self.message_user(request, f"A test e-mail was sent to {request.user.email}.", messages.SUCCESS)
        return back(request, reverse("admin:realms_realm_change", args=[realm.pk]))

    def switch_realm_view(self, request):
        """The header's realm selector posts here; back to where the admin was, in the new realm."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        set_current_realm(request, get_object_or_404(Realm, pk=request.POST.get("realm")))
        target = request.POST.get("next", "")
        if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()},
                                               require_https=request.is_secure()):
            target = reverse("admin:index")
        return HttpResponseRedirect(target)
