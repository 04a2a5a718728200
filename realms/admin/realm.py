"""Realms: settings (in Keycloak's console sections), default client scopes, keys (read-only),
signing-key rotation and the realm switcher's view."""
from django import forms
from django.contrib import admin, messages
from django.db import transaction
from django.http import HttpResponseNotAllowed, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.utils.html import format_html
from django.utils.http import url_has_allowed_host_and_scheme

from .. import keys, password_policy
from ..admin_permissions import administered_realms, console_admin, grant_delegated_admin
from ..models import Event, Realm, RealmDefaultClientScope, RealmKey, has_realm_role
from ..services import create_realm
from .audit import object_event
from .base import ConsoleAdmin, RealmScopedInline, adopt
from .secrets import SmtpPasswordMaskedForm
from .switcher import REALM_PARAM, set_current_realm


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

    def clean_password_policy(self):
        value = self.cleaned_data["password_policy"]
        try:
            password_policy.parse(value)
        except password_policy.PolicyConfigError as exc:
            raise forms.ValidationError(str(exc)) from None
        return value


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

    @admin.display(description="Console")
    def work_in_realm(self, obj):
        url = reverse("admin:realms_client_changelist") + f"?{REALM_PARAM}={obj.pk}"
        return format_html('<a href="{}">Manage this realm</a>', url)

    def save_model(self, request, obj, form, change):
        if change:
            return super().save_model(request, obj, form, change)
        fields = {k: v for k, v in form.cleaned_data.items() if k != "name"}
        adopt(obj, create_realm(form.cleaned_data["name"], **fields))
        if not request.user.is_superuser:
            grant_delegated_admin(request.user, obj)  # a realm's creator administers it
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
