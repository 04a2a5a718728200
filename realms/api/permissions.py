"""Which realm-management role a route needs, enforced per route.

A view says ``required_role = "view-users"`` (every method) or a mapping by method,
``required_role = {"GET": "view-events", "POST": "manage-events"}``; a method the mapping does
not name is refused. The master realm's ``admin`` passes everywhere; a realm's own users pass
with the role from that realm's ``realm-management`` client (composites such as ``realm-admin``
containing every role, ``view-users`` containing ``query-users`` and ``query-groups`` come from
the database)."""
from rest_framework import permissions


def required_role(view, method):
    role = view.required_role
    if isinstance(role, dict):
        return role.get("GET" if method == "HEAD" else method)
    return role


class RealmRole(permissions.BasePermission):
    def has_permission(self, request, view):
        if not hasattr(view, request.method.lower()):
            return True  # no such operation: the view answers 405, not 403
        role = required_role(view, request.method)
        return role is not None and request.user.may(role, view.realm)
