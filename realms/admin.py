"""The admin console: Django admin for realms and everything a realm owns.

One realm at a time (docs/decisions/0003-admin-console-realm-scoping.md): the admin's session
holds a current realm, chosen from the switcher in the header or with ``?realm__id__exact=`` on
any list. Every list of realm-owned objects shows that realm only, a new object goes into it,
and every foreign-key and many-to-many choice is limited to the realm of the object being
edited. Every add, change, delete and action is recorded as a Keycloak-style admin event in the
realm it touched, through ``realms.events.emit``, inside the same transaction.
"""
import json

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.options import IS_POPUP_VAR
from django.contrib.auth import update_session_auth_hash
from django.contrib.auth.forms import SetPasswordForm
from django.contrib.auth.models import Group as AuthGroup
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.db import models
from django.db.models import F
from django.http import Http404, HttpResponseNotAllowed, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html
from django.utils.http import url_has_allowed_host_and_scheme

from . import keys
from .console_secrets import SmtpPasswordMaskedForm
from .events import emit
from .web import is_cross_site
from .services import add_default_client_scopes, create_realm, create_user, enable_service_account
from .models import (
    Client,
    ClientScope,
    ClientScopeLink,
    Credential,
    Event,
    Group,
    ProtocolMapper,
    Realm,
    RealmDefaultClientScope,
    RealmKey,
    RealmOwned,
    Role,
    User,
)

admin.site.site_header = "Identity administration"
admin.site.site_title = "Identity admin"
admin.site.index_title = "Realms and what they own"
# Operators are master-realm users with the admin role; Django's own auth groups play no part.
if admin.site.is_registered(AuthGroup):
    admin.site.unregister(AuthGroup)

REALM_PARAM = "realm__id__exact"
SESSION_KEY = "admin_console_realm_id"


# --- The current realm -------------------------------------------------------------------------

def current_realm(request):
    """The realm the console works in: ``?realm__id__exact=`` if given (and then remembered),
    else the one remembered in the session, else master."""
    if hasattr(request, "_console_realm"):
        return request._console_realm
    realm = None
    wanted = request.GET.get(REALM_PARAM)
    if wanted:
        realm = Realm.objects.filter(pk=wanted).first()
    if realm is None and request.session.get(SESSION_KEY):
        realm = Realm.objects.filter(pk=request.session[SESSION_KEY]).first()
    if realm is None:
        realm = Realm.objects.filter(name="master").first() or Realm.objects.first()
    set_current_realm(request, realm)
    return realm


def set_current_realm(request, realm):
    request._console_realm = realm
    # A link from another site shows that realm once but is not remembered (no cross-site switch).
    if realm is not None and request.session.get(SESSION_KEY) != realm.pk and not is_cross_site(request):
        request.session[SESSION_KEY] = realm.pk


def realm_of(obj):
    if isinstance(obj, Realm):
        return obj
    return obj.realm if isinstance(obj, RealmOwned) and obj.realm_id else None


class RealmFilter(admin.SimpleListFilter):
    """The realm list filter: always exactly one realm (no "All"); defaults to the current one."""

    title = "realm"
    parameter_name = REALM_PARAM

    def __init__(self, request, params, model, model_admin):
        super().__init__(request, params, model, model_admin)
        self.current = current_realm(request)

    def lookups(self, request, model_admin):
        return [(r.pk, r.name) for r in Realm.objects.only("id", "name")]

    def value(self):
        requested = super().value()
        if requested is not None:
            return requested
        return self.current.pk if self.current else None

    def choices(self, changelist):
        return list(super().choices(changelist))[1:]  # drop "All": lists never mix realms

    def queryset(self, request, queryset):
        value = self.value()
        return queryset.filter(realm_id=value) if value else queryset.none()


# --- Admin events ------------------------------------------------------------------------------

# Values under these keys of JSON settings are masked in event representations (SMTP password,
# rotated client secrets), the way Keycloak strips secrets from what it records.
_SECRET_WORDS = ("password", "secret", "credential")
# Model fields that hold secrets at rest: never part of a representation.
_SECRET_FIELDS = {"secret_encrypted", "secret_digest", "registration_access_token",
                  "private_key_encrypted", "secret_data", "credential_data"}


def _mask(value):
    if isinstance(value, dict):
        return {k: "**********" if any(w in k.lower() for w in _SECRET_WORDS) else _mask(v)
                for k, v in value.items()}
    return value


def representation(obj):
    """The object's fields (no secrets) and many-to-many ids, as JSON."""
    data = {f.name: _mask(f.value_from_object(obj)) for f in obj._meta.concrete_fields
            if f.name not in _SECRET_FIELDS}
    if obj.pk:
        for f in obj._meta.many_to_many:
            if f.remote_field.through._meta.auto_created:
                data[f.name] = sorted(str(pk) for pk in getattr(obj, f.name).values_list("pk", flat=True))
    return json.dumps(data, cls=DjangoJSONEncoder, sort_keys=True)


def resource_of(obj):
    """Keycloak's (resource type, resource path relative to the realm) for an object."""
    if isinstance(obj, Realm):
        return "REALM", ""
    if isinstance(obj, Client):
        return "CLIENT", f"clients/{obj.pk}"
    if isinstance(obj, User):
        return "USER", f"users/{obj.pk}"
    if isinstance(obj, Role):
        if obj.client_id:
            return "CLIENT_ROLE", f"clients/{obj.client_id}/roles/{obj.name}"
        return "REALM_ROLE", f"roles/{obj.name}"
    if isinstance(obj, Group):
        return "GROUP", f"groups/{obj.pk}"
    if isinstance(obj, ClientScope):
        return "CLIENT_SCOPE", f"client-scopes/{obj.pk}"
    if isinstance(obj, RealmKey):
        return "COMPONENT", f"components/{obj.pk}"
    if isinstance(obj, ProtocolMapper):
        owner = f"clients/{obj.client_id}" if obj.client_id else f"client-scopes/{obj.client_scope_id}"
        return "PROTOCOL_MAPPER", f"{owner}/protocol-mappers/models/{obj.pk}"
    if isinstance(obj, ClientScopeLink):
        kind = "default" if obj.default else "optional"
        return "CLIENT_SCOPE_CLIENT_MAPPING", f"clients/{obj.client_id}/{kind}-client-scopes/{obj.client_scope_id}"
    if isinstance(obj, RealmDefaultClientScope):
        kind = "default" if obj.default else "optional"
        return "CLIENT_SCOPE", f"default-{kind}-client-scopes/{obj.client_scope_id}"
    if isinstance(obj, Credential):
        return "USER", f"users/{obj.user_id}/credentials/{obj.pk}"
    raise TypeError(f"no admin resource type for {type(obj).__name__}")


def owning_realm(obj):
    if isinstance(obj, ProtocolMapper):
        return (obj.client or obj.client_scope).realm
    if isinstance(obj, ClientScopeLink):
        return obj.client.realm
    if isinstance(obj, Credential):
        return obj.user.realm
    return realm_of(obj) or obj.realm


def admin_event(request, realm, operation, resource_type, resource_path, obj=None):
    """Record one admin operation (CREATE, UPDATE, DELETE, ACTION) done by the signed-in admin.
    The representation is included only when the realm asks for it (Include representation)."""
    rep = representation(obj) if obj is not None and realm.admin_events_details_enabled else ""
    return emit(
        realm, operation, kind=Event.ADMIN, resource_type=resource_type, resource_path=resource_path,
        representation=rep, user_id=request.user.pk, ip_address=request.META.get("REMOTE_ADDR", ""),
        details={"authRealmId": request.user.realm_id},
    )


def object_event(request, operation, obj):
    resource_type, resource_path = resource_of(obj)
    return admin_event(request, owning_realm(obj), operation, resource_type, resource_path,
                       None if operation == "DELETE" else obj)


def role_mapping_events(request, realm, owner_path, before, after):
    """CREATE/DELETE of realm- and client-role mappings, as Keycloak records them."""
    for operation, changed in (("CREATE", after - before), ("DELETE", before - after)):
        for role in Role.objects.filter(pk__in=changed).order_by(F("client_id").asc(nulls_first=True), "name"):
            if role.client_id:
                admin_event(request, realm, operation, "CLIENT_ROLE_MAPPING",
                            f"{owner_path}/role-mappings/clients/{role.client_id}")
            else:
                admin_event(request, realm, operation, "REALM_ROLE_MAPPING", f"{owner_path}/role-mappings/realm")


# --- Form pieces -------------------------------------------------------------------------------

class LinesField(forms.Field):
    """A list of strings (redirect URIs, web origins ...) edited one per line."""

    widget = forms.Textarea(attrs={"rows": 4, "cols": 80})

    def prepare_value(self, value):
        return "\n".join(value) if isinstance(value, (list, tuple)) else (value or "")

    def to_python(self, value):
        if isinstance(value, (list, tuple)):
            return list(value)
        return [line.strip() for line in (value or "").splitlines() if line.strip()]

    def has_changed(self, initial, data):
        return self.to_python(initial) != self.to_python(data)


class RealmScopedMixin:
    """Shared by the model admins and inlines: choices limited to the edited object's realm,
    list-valued JSON fields edited one per line."""

    line_list_fields = ()

    def form_realm(self, request):
        return getattr(request, "_console_form_realm", None)

    def remember_form_realm(self, request, obj):
        """``obj`` is the object edited (for an inline, its parent), None or unsaved when adding."""
        if isinstance(obj, Realm) or (obj is None and self.model is Realm):
            realm = obj if obj is not None and not obj._state.adding else None  # a new realm owns nothing yet
        else:
            realm = (realm_of(obj) if obj is not None else None) or current_realm(request)
        request._console_form_realm = realm

    def get_field_queryset(self, db, db_field, request):
        model = db_field.related_model
        realm = self.form_realm(request)
        if db_field.name == "realm" and model is Realm:
            return Realm.objects.filter(pk=realm.pk if realm else None)
        if not issubclass(model, RealmOwned):
            return super().get_field_queryset(db, db_field, request)
        queryset = super().get_field_queryset(db, db_field, request) or model._default_manager.using(db)
        if model is Role:
            queryset = queryset.select_related("client")
        return queryset.filter(realm=realm) if realm else queryset.none()

    def formfield_for_dbfield(self, db_field, request, **kwargs):
        if db_field.name in self.line_list_fields:
            return LinesField(required=not db_field.blank, label=db_field.verbose_name.capitalize(),
                              help_text="One per line.")
        return super().formfield_for_dbfield(db_field, request, **kwargs)


class RealmScopedInline(RealmScopedMixin, admin.TabularInline):
    extra = 0
    formfield_overrides = {models.TextField: {"widget": forms.TextInput(attrs={"size": 50})}}

    def get_formset(self, request, obj=None, **kwargs):
        self.remember_form_realm(request, obj)
        return super().get_formset(request, obj, **kwargs)


class ConsoleAdmin(RealmScopedMixin, admin.ModelAdmin):
    """Base of every model admin here: realm scoping plus admin events for each change."""

    show_full_result_count = False  # a count over all realms would mean nothing here

    def get_object(self, request, object_id, from_field=None):
        # An object's page belongs to its realm (as the realm is part of Keycloak's console URLs):
        # opening it makes that realm the current one, so the header and lists follow.
        obj = super().get_object(request, object_id, from_field)
        realm = realm_of(obj) if obj is not None else None
        if realm is not None:
            set_current_realm(request, realm)
        return obj

    def get_form(self, request, obj=None, change=False, **kwargs):
        self.remember_form_realm(request, obj)
        form = super().get_form(request, obj, change=change, **kwargs)
        realm_field = form.base_fields.get("realm")
        if realm_field is not None:
            # Shown but fixed: an object never moves between realms, and keeping the field in
            # the form lets Django validate the per-realm unique names before saving.
            realm = self.form_realm(request)
            realm_field.widget = realm_field.widget.widget  # no add/change links beside a fixed value
            realm_field.disabled = True
            realm_field.initial = realm.pk if realm else None
            realm_field.help_text = "Switch realms with the selector at the top of the page."
        return form

    def has_add_permission(self, request):
        # Everything but a realm is added into the current realm: nothing to add without one.
        if self.model is not Realm and current_realm(request) is None:
            return False
        return super().has_add_permission(request)

    def change_event(self, request, operation, obj):
        """The admin event of a change made on this page (CREATE, UPDATE, DELETE). An admin whose
        service functions record their own events (webhook endpoints) records nothing here."""
        object_event(request, operation, obj)

    # Mapping relations (many-to-many) whose changes are recorded as their own events.
    def mapping_snapshot(self, obj):
        return {}

    def mapping_events(self, request, obj, before, after):
        pass

    def save_model(self, request, obj, form, change):
        if change:
            request._console_before = self.mapping_snapshot(obj)
        super().save_model(request, obj, form, change)

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        obj = form.instance
        before = getattr(request, "_console_before", None) or {key: set() for key in self.mapping_snapshot(obj)}
        self.change_event(request, "UPDATE" if change else "CREATE", obj)
        self.mapping_events(request, obj, before, self.mapping_snapshot(obj))

    def save_formset(self, request, form, formset, change):
        deleted = [(f.instance, resource_of(f.instance), owning_realm(f.instance))
                   for f in formset.deleted_forms if f.instance.pk]
        instances = formset.save(commit=False)
        for obj in formset.deleted_objects:
            obj.delete()
        realm = realm_of(form.instance)
        for obj in instances:
            if isinstance(obj, RealmOwned) and not obj.realm_id:
                obj.realm = realm
            obj.save()
        formset.save_m2m()
        for obj, (resource_type, resource_path), obj_realm in deleted:
            admin_event(request, obj_realm, "DELETE", resource_type, resource_path)
        for obj in formset.new_objects:
            object_event(request, "CREATE", obj)
        for obj, _fields in formset.changed_objects:
            object_event(request, "UPDATE", obj)

    def delete_model(self, request, obj):
        self.change_event(request, "DELETE", obj)
        super().delete_model(request, obj)

    def delete_queryset(self, request, queryset):
        for obj in queryset:
            self.change_event(request, "DELETE", obj)
        super().delete_queryset(request, queryset)


def adopt(obj, created):
    """Make the admin's unsaved form instance the row a service function created, so that the
    admin's logging and redirect that follow refer to it."""
    obj.pk = created.pk
    obj._state.adding = False
    obj.refresh_from_db()


def realm_owned_list_filter(*more):
    return (RealmFilter, *more)


# --- Realms --------------------------------------------------------------------------------------

class RealmKeyInline(admin.TabularInline):
    """The realm's keys, read-only here (Keys tab); add or edit them under Realm keys."""

    model = RealmKey
    fields = readonly_fields = ("kid", "algorithm", "status", "priority", "provider_name", "created")
    show_change_link = True
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class RealmDefaultClientScopeInline(RealmScopedInline):
    model = RealmDefaultClientScope
    fields = ("client_scope", "default")
    verbose_name = "default client scope"
    verbose_name_plural = "Default client scopes (given to new clients: default, or optional when unticked)"


class RealmForm(SmtpPasswordMaskedForm):
    default_signature_algorithm = forms.ChoiceField(choices=RealmKey.ALGORITHMS, initial="RS256")

    class Meta:
        # Keycloak's console names, where the field name alone reads poorly; durations in seconds.
        labels = {
            "ssl_required": "Require SSL",
            "display_name_html": "HTML display name",
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
            "smtp_server": "SMTP server",
            "otp_policy": "OTP policy",
            "webauthn_policy": "WebAuthn policy",
            "events_expiration": "Expiration (s)",
            "admin_events_details_enabled": "Include representation",
        }


@admin.register(Realm)
class RealmAdmin(ConsoleAdmin):
    form = RealmForm
    show_full_result_count = True  # the one list that spans realms
    list_display = ("name", "display_name", "enabled", "work_in_realm")
    search_fields = ("name", "display_name")
    actions = ["rotate_signing_key"]
    line_list_fields = ("supported_locales", "events_listeners", "enabled_event_types", "required_credentials")
    readonly_fields = ("id", "created")

    fieldsets = [
        ("General", {"fields": ("name", "display_name", "display_name_html", "enabled", "ssl_required")}),
        ("Login", {"fields": (
            "registration_allowed", "registration_email_as_username", "remember_me", "verify_email",
            "login_with_email_allowed", "duplicate_emails_allowed", "reset_password_allowed",
            "edit_username_allowed", "passkeys_enabled", "organizations_enabled",
        )}),
        ("Themes and localization", {"classes": ("collapse",), "fields": (
            "login_theme", "account_theme", "email_theme", "internationalization_enabled",
            "supported_locales", "default_locale", "localization_texts",
        )}),
        ("Email", {"classes": ("collapse",), "fields": ("smtp_server",)}),
        ("Tokens", {"fields": (
            "default_signature_algorithm", "revoke_refresh_token", "refresh_token_max_reuse",
            "access_token_lifespan", "access_token_lifespan_for_implicit_flow", "access_code_lifespan",
            "access_code_lifespan_user_action", "access_code_lifespan_login",
            "action_token_generated_by_admin_lifespan", "action_token_generated_by_user_lifespan",
            "oauth2_device_code_lifespan", "oauth2_device_polling_interval", "not_before",
        )}),
        ("Sessions", {"fields": (
            "sso_session_idle_timeout", "sso_session_max_lifespan", "sso_session_idle_timeout_remember_me",
            "sso_session_max_lifespan_remember_me", "client_session_idle_timeout", "client_session_max_lifespan",
            "offline_session_idle_timeout", "offline_session_max_lifespan_enabled", "offline_session_max_lifespan",
            "client_offline_session_idle_timeout", "client_offline_session_max_lifespan",
        )}),
        ("Security defenses: brute force detection and headers", {"classes": ("collapse",), "fields": (
            "brute_force_protected", "permanent_lockout", "max_temporary_lockouts", "max_failure_wait_seconds",
            "minimum_quick_login_wait_seconds", "wait_increment_seconds", "quick_login_check_milli_seconds",
            "max_delta_time_seconds", "failure_factor", "browser_security_headers",
        )}),
        ("Authentication: flows and policies", {"classes": ("collapse",), "fields": (
            "browser_flow", "registration_flow", "direct_grant_flow", "reset_credentials_flow",
            "client_authentication_flow", "docker_authentication_flow", "first_broker_login_flow",
            "password_policy", "otp_policy", "webauthn_policy", "required_credentials",
        )}),
        ("Events", {"fields": (
            "events_enabled", "events_expiration", "events_listeners", "enabled_event_types",
            "admin_events_enabled", "admin_events_details_enabled",
        )}),
        ("Advanced", {"classes": ("collapse",), "fields": ("default_role", "attributes", "id", "created")}),
    ]

    def get_fieldsets(self, request, obj=None):
        if obj is None:  # the default role and ids come from create_realm
            return [(name, {**opts, "fields": tuple(f for f in opts["fields"]
                                                    if f not in ("default_role", "id", "created"))})
                    for name, opts in self.fieldsets]
        return self.fieldsets

    def get_readonly_fields(self, request, obj=None):
        if obj is not None and obj.is_master:
            return (*self.readonly_fields, "name")  # the console itself signs in through master
        return self.readonly_fields

    def get_inlines(self, request, obj):
        return [RealmDefaultClientScopeInline, RealmKeyInline] if obj is not None else []

    def has_delete_permission(self, request, obj=None):
        if obj is not None and obj.is_master:
            return False
        return super().has_delete_permission(request, obj)

    def get_deleted_objects(self, objs, request):
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        # Stored events are read-only in the console, yet they go with their realm.
        perms_needed.discard(Event._meta.verbose_name)
        return deleted, counts, perms_needed, protected

    @admin.display(description="Console")
    def work_in_realm(self, obj):
        url = reverse("admin:realms_client_changelist") + f"?{REALM_PARAM}={obj.pk}"
        return format_html('<a href="{}">Manage this realm</a>', url)

    def save_model(self, request, obj, form, change):
        if change:
            return super().save_model(request, obj, form, change)
        fields = {k: v for k, v in form.cleaned_data.items() if k != "name"}
        adopt(obj, create_realm(form.cleaned_data["name"], **fields))
        set_current_realm(request, obj)

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
            *super().get_urls(),
        ]

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


@admin.register(RealmKey)
class RealmKeyAdmin(ConsoleAdmin):
    """Realm signing keys: listed with kid, algorithm, status and priority. Adding one generates
    a fresh key pair; the private key is never shown (it is stored encrypted)."""

    list_display = ("kid", "algorithm", "status", "priority", "provider_name", "created")
    list_filter = realm_owned_list_filter("status", "algorithm")
    search_fields = ("kid",)

    def get_fields(self, request, obj=None):
        if obj is None:
            return ("realm", "algorithm", "priority", "status")
        return ("realm", "kid", "algorithm", "use", "provider_name", "status", "priority", "created",
                "public_key_pem", "certificate_pem")

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return ()
        return ("kid", "algorithm", "use", "provider_name", "created", "public_key_pem", "certificate_pem")

    def save_model(self, request, obj, form, change):
        if change:
            return super().save_model(request, obj, form, change)
        adopt(obj, keys.generate_key(obj.realm, obj.algorithm, priority=obj.priority, status=obj.status))


# --- Clients -------------------------------------------------------------------------------------

class ClientScopeLinkInline(RealmScopedInline):
    model = ClientScopeLink
    fields = ("client_scope", "default")
    verbose_name = "client scope"
    verbose_name_plural = "Client scopes (default: always in the token; unticked: optional, on request)"


class ClientProtocolMapperInline(RealmScopedInline):
    model = ProtocolMapper
    fk_name = "client"
    fields = ("name", "protocol_mapper", "protocol", "consent_required", "config")
    verbose_name_plural = "Dedicated protocol mappers"


class ClientRoleInline(RealmScopedInline):
    model = Role
    fk_name = "client"
    fields = ("name", "description")
    verbose_name = "client role"
    verbose_name_plural = "Client roles (composites and attributes: under Roles)"


class ClientForm(forms.ModelForm):
    def clean(self):
        cleaned = super().clean()
        if cleaned.get("public_client") and cleaned.get("bearer_only"):
            raise ValidationError("A client is either public or bearer-only, not both.")
        return cleaned


@admin.register(Client)
class ClientAdmin(ConsoleAdmin):
    form = ClientForm
    list_display = ("client_id", "name", "enabled", "public_client", "protocol")
    list_filter = realm_owned_list_filter("enabled", "public_client", "protocol")
    search_fields = ("client_id", "name")
    actions = ["regenerate_client_secret"]
    filter_horizontal = ("scope_roles",)
    line_list_fields = ("redirect_uris", "web_origins")
    readonly_fields = ("id", "secret_status", "created")
    inlines = [ClientScopeLinkInline, ClientProtocolMapperInline, ClientRoleInline]
    fieldsets = [
        ("General", {"fields": ("realm", "client_id", "name", "description", "enabled",
                                "always_display_in_console", "protocol")}),
        ("Access settings", {"fields": ("root_url", "base_url", "admin_url", "redirect_uris", "web_origins")}),
        ("Capability config", {"fields": (
            "public_client", "bearer_only", "client_authenticator_type", "standard_flow_enabled",
            "implicit_flow_enabled", "direct_access_grants_enabled", "service_accounts_enabled",
            "authorization_services_enabled",
        )}),
        ("Credentials", {"fields": ("secret_status",)}),
        ("Login and logout", {"fields": ("consent_required", "frontchannel_logout")}),
        ("Dedicated scope", {"fields": ("full_scope_allowed", "scope_roles")}),
        ("Advanced", {"classes": ("collapse",), "fields": (
            "attributes", "authentication_flow_binding_overrides", "node_re_registration_timeout",
            "not_before", "surrogate_auth_required", "id", "created",
        )}),
    ]

    @admin.display(description="Client secret")
    def secret_status(self, obj):
        if not obj.confidential:
            return "None (public or bearer-only client)"
        if obj.secret_digest:
            return "Set. It is shown once, when generated; use the action \u201cRegenerate client secret\u201d."
        return "Not set yet: one is generated when the client is saved."

    def save_model(self, request, obj, form, change):
        secret = obj.regenerate_secret() if obj.confidential and not obj.secret_digest else None
        super().save_model(request, obj, form, change)
        if secret:
            self.message_user(request, f"Client secret of {obj.client_id}: {secret}  (copy it now; it will "
                                       f"not be shown again)", messages.WARNING)

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        client = form.instance
        if not change:
            # Like Keycloak, a new client gets the realm's default client scopes of its protocol.
            linked = set(client.scope_links.values_list("pk", flat=True))
            add_default_client_scopes(client)
            for link in client.scope_links.exclude(pk__in=linked).select_related("client__realm"):
                object_event(request, "CREATE", link)
        if client.service_accounts_enabled:
            enable_service_account(client)

    @admin.action(description="Regenerate client secret (shown once)")
    def regenerate_client_secret(self, request, queryset):
        for client in queryset:
            if not client.confidential:
                self.message_user(request, f"{client.client_id} is a public or bearer-only client: it has "
                                           f"no secret.", messages.ERROR)
                continue
            with transaction.atomic():
                secret = client.regenerate_secret()
                client.save(update_fields=["secret_encrypted", "secret_digest"])
                admin_event(request, client.realm, "ACTION", "CLIENT", f"clients/{client.pk}/client-secret")
            self.message_user(request, f"New client secret of {client.client_id}: {secret}  (copy it now; "
                                       f"it will not be shown again)", messages.WARNING)


# --- Client scopes -------------------------------------------------------------------------------

class ScopeProtocolMapperInline(RealmScopedInline):
    model = ProtocolMapper
    fk_name = "client_scope"
    fields = ("name", "protocol_mapper", "protocol", "consent_required", "config")
    verbose_name_plural = "Protocol mappers"


@admin.register(ClientScope)
class ClientScopeAdmin(ConsoleAdmin):
    list_display = ("name", "protocol", "description")
    list_filter = realm_owned_list_filter("protocol")
    search_fields = ("name",)
    filter_horizontal = ("scope_roles",)
    fields = ("realm", "name", "description", "protocol", "attributes", "scope_roles")
    inlines = [ScopeProtocolMapperInline]


# --- Roles and groups ----------------------------------------------------------------------------

class RoleKindFilter(admin.SimpleListFilter):
    title = "kind"
    parameter_name = "kind"

    def lookups(self, request, model_admin):
        return [("realm", "Realm roles"), ("client", "Client roles")]

    def queryset(self, request, queryset):
        if self.value() == "realm":
            return queryset.filter(client__isnull=True)
        if self.value() == "client":
            return queryset.filter(client__isnull=False)
        return queryset


class RoleForm(forms.ModelForm):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk and "composites" in self.fields:
            self.fields["composites"].queryset = self.fields["composites"].queryset.exclude(pk=self.instance.pk)


@admin.register(Role)
class RoleAdmin(ConsoleAdmin):
    form = RoleForm
    list_display = ("name", "client", "description", "is_composite")
    list_filter = realm_owned_list_filter(RoleKindFilter)
    list_select_related = ("client",)
    search_fields = ("name", "description", "client__client_id")
    filter_horizontal = ("composites",)
    fields = ("realm", "client", "name", "description", "attributes", "composites")

    def get_readonly_fields(self, request, obj=None):
        return ("client",) if obj is not None else ()  # a role never moves between clients

    @admin.display(boolean=True, description="composite")
    def is_composite(self, obj):
        return obj.composite


def _descendants(group):
    found, frontier = set(), {group.pk}
    while frontier:
        frontier = set(Group.objects.filter(parent_id__in=frontier).values_list("pk", flat=True)) - found
        found |= frontier
    return found


class GroupForm(forms.ModelForm):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk and "parent" in self.fields:
            # A group cannot sit under itself or its own subgroups (the tree would become a loop).
            excluded = _descendants(self.instance) | {self.instance.pk}
            self.fields["parent"].queryset = self.fields["parent"].queryset.exclude(pk__in=excluded)


def _role_ids(obj):
    return set(obj.roles.values_list("pk", flat=True)) if obj.pk else set()


@admin.register(Group)
class GroupAdmin(ConsoleAdmin):
    form = GroupForm
    list_display = ("path", "description", "member_count")
    list_filter = realm_owned_list_filter()
    search_fields = ("name",)
    filter_horizontal = ("roles",)
    fields = ("realm", "name", "parent", "description", "attributes", "roles")

    @admin.display(description="members")
    def member_count(self, obj):
        return obj.members.count()

    def mapping_snapshot(self, obj):
        return {"roles": _role_ids(obj)}

    def mapping_events(self, request, obj, before, after):
        role_mapping_events(request, obj.realm, f"groups/{obj.pk}", before["roles"], after["roles"])


# --- Users ---------------------------------------------------------------------------------------

class CredentialInline(admin.TabularInline):
    """Credentials by type and date only; the secret is never shown. Deleting one is allowed
    (a lost authenticator); a password is set through "Set password"."""

    model = Credential
    fields = readonly_fields = ("type", "user_label", "priority", "created")
    extra = 0
    can_delete = True

    def has_add_permission(self, request, obj=None):
        return False


class UserPasswordForm(SetPasswordForm):
    """Sets the password through User.set_password (an Argon2id hash in a Credential row);
    the raw value is neither shown nor kept."""

    temporary = forms.BooleanField(
        required=False, initial=True,
        help_text="The user must choose a new password at the next sign-in (required action UPDATE_PASSWORD).",
    )

    def save(self, commit=True):
        user = self.user
        user.set_password(self.cleaned_data["new_password1"])
        actions = [a for a in user.required_actions if a != "UPDATE_PASSWORD"]
        if self.cleaned_data["temporary"]:
            actions.append("UPDATE_PASSWORD")
        user.required_actions = actions
        if commit:
            user.save()
        return user


class UserForm(forms.ModelForm):
    def clean_username(self):
        return self.cleaned_data["username"].lower()  # usernames are case-insensitive, as in Keycloak


@admin.register(User)
class UserAdmin(ConsoleAdmin):
    form = UserForm
    list_display = ("username", "email", "first_name", "last_name", "enabled", "email_verified")
    list_filter = realm_owned_list_filter("enabled", "email_verified")
    search_fields = ("username", "email", "first_name", "last_name")
    filter_horizontal = ("roles", "groups")
    actions = ["enable_users", "disable_users"]
    line_list_fields = ("required_actions",)
    readonly_fields = ("id", "password_status", "service_account_client", "created")
    inlines = [CredentialInline]
    fieldsets = [
        (None, {"fields": ("realm", "username", "email", "email_verified", "first_name", "last_name", "enabled")}),
        ("Password", {"fields": ("password_status",)}),
        ("Role mapping (realm roles, and client roles as client:role)", {"fields": ("roles",)}),
        ("Groups", {"fields": ("groups",)}),
        ("Details", {"classes": ("collapse",), "fields": (
            "required_actions", "attributes", "federation_link", "service_account_client", "id", "created",
        )}),
    ]
    add_fieldsets = [(None, {"fields": ("realm", "username", "email", "email_verified", "first_name",
                                        "last_name", "enabled")})]

    def get_fieldsets(self, request, obj=None):
        return self.add_fieldsets if obj is None else self.fieldsets

    def get_inlines(self, request, obj):
        return self.inlines if obj is not None else []

    @admin.display(description="Password")
    def password_status(self, obj):
        url = reverse("admin:realms_user_password", args=[obj.pk])
        label = "Reset password" if obj.has_usable_password() else "Set password"
        state = "A password is set." if obj.has_usable_password() else "No password."
        return format_html('{} <a class="button" href="{}">{}</a>', state, url, label)

    def mapping_snapshot(self, obj):
        groups = set(obj.groups.values_list("pk", flat=True)) if obj.pk else set()
        return {"roles": _role_ids(obj), "groups": groups}

    def mapping_events(self, request, obj, before, after):
        role_mapping_events(request, obj.realm, f"users/{obj.pk}", before["roles"], after["roles"])
        for operation, changed in (("CREATE", after["groups"] - before["groups"]),
                                   ("DELETE", before["groups"] - after["groups"])):
            for group_id in sorted(changed):
                admin_event(request, obj.realm, operation, "GROUP_MEMBERSHIP", f"users/{obj.pk}/groups/{group_id}")

    def save_model(self, request, obj, form, change):
        if change:
            return super().save_model(request, obj, form, change)
        # Through the service every new user goes through: lower-cased name, the realm's default role.
        fields = {k: v for k, v in form.cleaned_data.items() if k not in ("realm", "username")}
        adopt(obj, create_user(obj.realm, obj.username, **fields))

    def response_add(self, request, obj, post_url_continue=None):
        # Like Keycloak, a new user is created without credentials; go on to the user's page.
        if "_addanother" not in request.POST and IS_POPUP_VAR not in request.POST:
            request.POST = request.POST.copy()
            request.POST["_continue"] = "1"
        return super().response_add(request, obj, post_url_continue)

    def get_urls(self):
        return [
            path("<path:object_id>/password/", self.admin_site.admin_view(self.set_password_view),
                 name="realms_user_password"),
            *super().get_urls(),
        ]

    def set_password_view(self, request, object_id):
        user = self.get_object(request, object_id)
        if user is None:
            raise Http404("No such user.")
        if not self.has_change_permission(request, user):
            raise PermissionDenied
        if request.method == "POST":
            form = UserPasswordForm(user, request.POST)
            if form.is_valid():
                with transaction.atomic():
                    form.save()
                    admin_event(request, user.realm, "ACTION", "USER", f"users/{user.pk}/reset-password")
                    self.log_change(request, user, "Set password.")
                update_session_auth_hash(request, user)  # keeps the admin signed in after their own change
                self.message_user(request, "Password set.", messages.SUCCESS)
                return HttpResponseRedirect(reverse("admin:realms_user_change", args=[user.pk]))
        else:
            form = UserPasswordForm(user)
        context = {
            **self.admin_site.each_context(request),
            "title": f"Set password: {user.username}",
            "form": form,
            "adminform": admin.helpers.AdminForm(form, [(None, {"fields": list(form.base_fields)})], {}),
            "opts": self.opts,
            "original": user,
        }
        return TemplateResponse(request, "admin/realms/user/set_password.html", context)

    def _set_enabled(self, request, queryset, enabled):
        with transaction.atomic():
            for user in queryset.select_related("realm"):
                if user.enabled != enabled:
                    user.enabled = enabled
                    user.save(update_fields=["enabled"])
                    object_event(request, "UPDATE", user)

    @admin.action(description="Enable selected users")
    def enable_users(self, request, queryset):
        self._set_enabled(request, queryset, True)

    @admin.action(description="Disable selected users")
    def disable_users(self, request, queryset):
        self._set_enabled(request, queryset, False)


# --- Events --------------------------------------------------------------------------------------

@admin.register(Event)
class EventAdmin(ConsoleAdmin):
    """Stored user and admin events of the realm, read-only."""

    list_display = ("time", "kind", "type", "resource_type", "resource_path", "client_id", "user_id",
                    "ip_address", "error")
    list_filter = realm_owned_list_filter("kind", "type")
    search_fields = ("type", "resource_path", "user_id", "client_id")
    date_hierarchy = "time"

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
