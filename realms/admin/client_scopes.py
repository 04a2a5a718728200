"""Client scopes, with their protocol mappers."""
from django.contrib import admin

from ..models import ClientScope, ProtocolMapper
from .base import ConsoleAdmin, RealmScopedInline, realm_owned_list_filter


class ScopeProtocolMapperInline(RealmScopedInline):
    model = ProtocolMapper
    fk_name = "client_scope"
    fields = ("name", "protocol_mapper", "protocol", "consent_required", "config")
    verbose_name_plural = "Protocol mappers"


@admin.register(ClientScope)
class ClientScopeAdmin(ConsoleAdmin):
    view_role, manage_role = "view-clients", "manage-clients"
    list_display = ("name", "protocol", "description")
    list_filter = realm_owned_list_filter("protocol")
    search_fields = ("name",)
    filter_horizontal = ("scope_roles",)
    fields = ("realm", "name", "description", "protocol", "attributes", "scope_roles")
    inlines = [ScopeProtocolMapperInline]
