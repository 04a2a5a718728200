"""Which realm-management role a route needs, enforced per route through
``realms.administration.admin_permissions.can``.

A view says ``required_role = "view-users"`` (every method) or a mapping by method,
``required_role = {"GET": "view-events", "POST": "manage-events"}``; a method the mapping does
not name is refused; a tuple of roles is any one of them (a list Keycloak opens to several
roles, decided by roles alone). Holding the role (composites included) lets the request
through. Without it, a realm with fine-grained admin permissions decides on the object the route
addresses (the view's ``permission_targets``): ``GET users/{id}`` is the user's ``view``,
``PUT`` its ``manage``; a collection is decided for every object of the type (and narrowed by
the view)."""
from rest_framework import permissions

from ..administration.admin_permissions import holds


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
        if role is None:
            return False
        caller = request.user
        if isinstance(role, tuple):
            return any(holds(caller.admin, view.realm, one) for one in role)
        if holds(caller.admin, view.realm, role):
            return True
        targets = view.permission_targets("GET" if request.method == "HEAD" else request.method, role)
        if not targets:
            return caller.may(role, view.realm)
        return all(caller.may(action, view.realm, target) for action, target in targets)
