"""Stored events of the realm, read-only, as Keycloak's Events page: user events and admin events
on two tabs of one page (``?kind__exact=user`` / ``admin``), each with its key columns first so
they fit at 1280 px."""
from django.contrib import admin
from django.db.models import OuterRef, Subquery
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from ..models import Event, User
from .base import ConsoleAdmin, ViewOnly, realm_owned_list_filter
from .names import time_column
from .navigation import default_filter

KIND = "kind__exact"
TABS = ((Event.USER, "User events"), (Event.ADMIN, "Admin events"))
COLUMNS = {
    Event.USER: ("shown_time", "type", "user", "client", "ip", "error"),
    Event.ADMIN: ("shown_time", "operation", "resource_type", "resource_path", "admin_user", "ip"),
}


@admin.register(Event)
class EventAdmin(ViewOnly, ConsoleAdmin):
    view_role, manage_role = "view-events", "manage-events"
    list_filter = realm_owned_list_filter("type")
    search_fields = ("type", "resource_path", "user_id", "client_id", "ip_address", "error")
    list_display_links = ("shown_time",)
    fields = ("realm", "kind", "shown_time", "type", "user", "client_id", "session_id", "ip_address", "error",
              "resource_type", "resource_path", "details", "representation")
    readonly_fields = ("shown_time", "user")

    def changelist_view(self, request, extra_context=None):
        redirect = default_filter(request, **{KIND: Event.USER})
        if redirect is not None:
            return redirect
        kind = request.GET[KIND]
        tabs = format_html_join(" ", '<a href="?{}={}"{}>{}</a>', (
            (KIND, value, mark_safe(' aria-current="page" class="selected"') if value == kind else "", label)
            for value, label in TABS))
        extra_context = {"event_tabs": format_html('<nav class="console-subnav" aria-label="Events">{}</nav>', tabs),
                         **(extra_context or {})}
        return super().changelist_view(request, extra_context)

    def get_list_display(self, request):
        return COLUMNS.get(request.GET.get(KIND), COLUMNS[Event.USER])

    def get_queryset(self, request):
        # The user's name in one query with the list (an event keeps the id, as Keycloak's).
        return super().get_queryset(request).annotate(
            username=Subquery(User.objects.filter(pk=OuterRef("user_id")).values("username")[:1]))

    shown_time = time_column("time", "Time")

    @admin.display(description="Operation", ordering="type")
    def operation(self, obj):
        return obj.type

    @admin.display(description="User", ordering="user_id")
    def user(self, obj):
        if not obj.user_id:
            return "-"
        name = getattr(obj, "username", None)
        if name is None:
            return obj.user_id
        return format_html('<a href="{}">{}</a>', reverse("admin:realms_user_change", args=[obj.user_id]), name)

    @admin.display(description="Client", ordering="client_id")
    def client(self, obj):
        return obj.client_id or "-"

    @admin.display(description="IP address", ordering="ip_address")
    def ip(self, obj):
        return obj.ip_address or "-"

    @admin.display(description="Admin user", ordering="user_id")
    def admin_user(self, obj):
        return self.user(obj)

