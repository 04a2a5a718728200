"""Stored user and admin events, read-only."""
from django.contrib import admin

from ..models import Event
from .base import ConsoleAdmin, realm_owned_list_filter


@admin.register(Event)
class EventAdmin(ConsoleAdmin):
    view_role, manage_role = "view-events", "manage-events"
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
