"""Sessions in the console: the realm's, a client's and a user's online sessions listed as
Keycloak's console lists them (user, address, started, last access, clients), each with "Sign
out", beside "log out all" (``sessions.logout_all`` / ``logout_user``, as the Admin API's
``logout-all`` and ``users/{id}/logout``).

The buttons post the page's action form, not the object's (decision 0062): Enter in a field of
the object's form saves it and never runs one of them.

``UserSessionAdmin`` is the Sessions page of the console's navigation (Keycloak's): the current
realm's online sessions, newest activity first, read-only, each with "Sign out"."""
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import HttpResponseNotAllowed, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.http import url_has_allowed_host_and_scheme

from ..audit.admin_events import ended_session
from ..models import UserSession
from ..sso import sessions
from ..sso.impersonation import IMPERSONATOR_USERNAME
from .audit import admin_event
from .base import ConsoleAdmin, ViewOnly, realm_owned_list_filter
from .names import when

# The id of the empty form (its CSRF token only) that templates/admin/console/change_form.html
# places after the object's form.
ACTION_FORM = "console-action"


def post_button(url, label, *, danger=False, confirm=""):
    """A button that posts the page's action form to ``url``. Shown among the object's fields, it
    belongs to that form through ``form=``, so the browser never takes it for the object's form's
    default button (the one Enter presses)."""
    return format_html('<button type="submit" form="{}" class="button{}" formaction="{}"{}>{}</button>',
                       ACTION_FORM, " console-danger" if danger else "", url,
                       format_html(' data-confirm="{}" onclick="return confirm(this.dataset.confirm)"', confirm)
                       if confirm else "", label)


def _user_link(user_session):
    impersonator = user_session.notes.get(IMPERSONATOR_USERNAME)
    return format_html('<a href="{}">{}</a>{}', reverse("admin:realms_user_change", args=[user_session.user_id]),
                       user_session.user.username,
                       format_html(" (impersonated by {})", impersonator) if impersonator else "")


def _clients(user_session):
    return ", ".join(sorted(cs.client.client_id for cs in user_session.client_sessions.all())) or "-"


def sessions_table(queryset, tab="sessions", limit=100):
    rows = list(queryset.filter(offline=False).select_related("user", "realm").prefetch_related("client_sessions__client")
                .order_by("-last_refresh")[:limit + 1])
    if not rows:
        return "No active sessions."
    body = format_html_join("", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", (
        (_user_link(s), s.ip_address or "-", when(s.started, s.realm), when(s.last_refresh, s.realm), _clients(s),
         post_button(reverse("admin:realms_realm_signout_session", args=[s.pk]) + f"?tab={tab}", "Sign out",
                     danger=True))
        for s in rows[:limit]))
    more = format_html("<p>Showing the {} most recent.</p>", limit) if len(rows) > limit else ""
    return format_html('<table class="console-table"><thead><tr><th>User</th><th>IP address</th><th>Started</th>'
                       '<th>Last access</th><th>Clients</th><th></th></tr></thead><tbody>{}</tbody></table>{}',
                       body, more)


def logout_all_button(url, label):
    return format_html('<div class="console-actions">{}</div>', post_button(
        url, label, danger=True, confirm="Sign out every session now? Tokens issued before now stop working."))


def back(request, fallback):
    """Back to the page the button was on, at the tab named by ``?tab=``."""
    target = request.META.get("HTTP_REFERER", "").split("#")[0]
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()},
                                           require_https=request.is_secure()):
        target = fallback
    tab = request.GET.get("tab", "")
    return HttpResponseRedirect(f"{target}#{tab}" if tab.replace("-", "").isalnum() else target)


def signout_session_view(model_admin, request, session_id):
    """Ends one session (the Admin API's ``DELETE sessions/{id}``)."""
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    user_session = get_object_or_404(UserSession.objects.select_related("realm", "user"), pk=session_id)
    if not model_admin.has_change_permission(request, user_session.realm):
        raise PermissionDenied
    with transaction.atomic():
        sessions.end_session(user_session)
        admin_event(request, user_session.realm, "DELETE", "USER_SESSION", f"sessions/{user_session.pk}",
                    details=ended_session(user_session))
    model_admin.message_user(request, f"Signed out a session of {user_session.user.username}.", messages.SUCCESS)
    return back(request, reverse("admin:realms_user_change", args=[user_session.user_id]))


@admin.register(UserSession)
class UserSessionAdmin(ViewOnly, ConsoleAdmin):
    """The realm's online sessions (the realm page's "Active sessions" tab, as a page of its own)."""

    list_display = ("user_link", "ip", "started_at", "last_access", "clients")
    list_display_links = None
    list_filter = realm_owned_list_filter()
    search_fields = ("user__username", "ip_address")
    fields = ("realm", "user_link", "ip", "started_at", "last_access", "clients", "remember_me", "auth_methods")
    readonly_fields = fields
    ordering = ("-last_refresh",)
    change_list_template = "admin/realms/usersession/change_list.html"

    def get_queryset(self, request):
        return (super().get_queryset(request).filter(offline=False).select_related("user", "realm")
                .prefetch_related("client_sessions__client"))

    def get_list_display(self, request):
        # "Sign out" for those who may: the realm page's button, with its rule (manage-realm).
        return (*self.list_display, "sign_out") if self.may(request, self.manage_role) else self.list_display

    @admin.display(description="User", ordering="user__username")
    def user_link(self, obj):
        return _user_link(obj)

    @admin.display(description="IP address", ordering="ip_address")
    def ip(self, obj):
        return obj.ip_address or "-"

    @admin.display(description="Started", ordering="started")
    def started_at(self, obj):
        return when(obj.started, obj.realm)

    @admin.display(description="Last access", ordering="last_refresh")
    def last_access(self, obj):
        return when(obj.last_refresh, obj.realm)

    @admin.display(description="Clients")
    def clients(self, obj):
        return _clients(obj)

    @admin.display(description="")
    def sign_out(self, obj):
        return post_button(reverse("admin:realms_realm_signout_session", args=[obj.pk]), "Sign out", danger=True)

