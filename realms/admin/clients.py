"""Clients, with their client scopes, dedicated protocol mappers and client roles."""
from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db import transaction

from ..models import Client, ClientScopeLink, ProtocolMapper, Role
from ..accounts import enable_service_account
from ..services import add_default_client_scopes
from .audit import admin_event, object_event
from .base import ConsoleAdmin, RealmScopedInline, realm_owned_list_filter


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
    view_role, manage_role, list_role = "view-clients", "manage-clients", "query-clients"
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
