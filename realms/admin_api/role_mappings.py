"""Role mappings of a user or a group (Keycloak's RoleMapperResource and ClientRoleMappingsResource):
``{users|groups}/{id}/role-mappings`` (MappingsRepresentation), ``.../realm`` and
``.../clients/{client}`` with GET, POST (add) and DELETE (remove) of a list of RoleRepresentation
found by id or name, and the ``composite`` (effective) and ``available`` views. As Keycloak's
``getAvailable...``, ``available`` lists the roles not mapped directly that the caller may map:
a role the owner has only through a composite or a group is still offered. Users and groups are
governed by ``view-users`` and ``manage-users``, as in Keycloak.

The scope mappings of a client or a client scope (Keycloak's ScopeMappedResource,
``{clients|client-scopes}/{id}/scope-mappings``) are the same resource on another owner: the
roles its tokens may carry, governed by ``view-clients`` and ``manage-clients``."""
from django.db import transaction
from rest_framework import exceptions, status
from rest_framework.response import Response

from ..administration.admin_permissions import visible
from ..audit import admin_events
from ..models import Client, ClientScope, Group, Role, User, effective_roles, expand_composites, group_with_ancestors
from . import errors
from .reps import brief_role_rep
from .views import RealmResource

_OWNERS = {  # kind: (model, 404 message)
    "users": (User, "User not found"),
    "groups": (Group, "Could not find group by id"),
    "clients": (Client, "Could not find client"),
    "client-scopes": (ClientScope, "Could not find client scope"),
}
_SCOPED = ("clients", "client-scopes")
# The scope on a role that lets the caller add it to or remove it from the owner (Keycloak's
# canMapRole and canMapClientScope): the ``available`` view offers those roles only.
_MAP_SCOPE = {"users": "map-role", "groups": "map-role", "clients": "map-role-client-scope",
              "client-scopes": "map-role-client-scope"}
USER_ROLES = {"GET": "view-users", "POST": "manage-users", "DELETE": "manage-users"}
CLIENT_ROLES = {"GET": "view-clients", "POST": "manage-clients", "DELETE": "manage-clients"}


class _Owner(RealmResource):
    """``kind`` is a key of ``_OWNERS``; the owner's id is the ``owner_id`` path argument."""

    kind = "users"

    @property
    def fine_grained(self):
        """Keycloak's checks on the owner: a user's ``view`` and ``map-roles``, a group's or a
        client's ``view`` and ``manage``; a client scope's are its roles' only."""
        kind, change = {"users": ("Users", "map-roles"), "groups": ("Groups", "manage"),
                        "clients": ("Clients", "manage")}.get(self.kind, (None, None))
        if kind is None:
            return {"GET": [], "POST": [], "DELETE": []}
        return {"GET": [(kind, "view", "owner_id")], "POST": [(kind, change, "owner_id")],
                "DELETE": [(kind, change, "owner_id")]}

    @property
    def segment(self):
        return "scope-mappings" if self.kind in _SCOPED else "role-mappings"

    def owner(self):
        model, missing = _OWNERS[self.kind]
        owner = self.row(model, self.kwargs["owner_id"])
        if owner is None:
            raise errors.NotFound(missing)
        return owner

    def mapped(self, owner):
        """The owner's own roles: a user's or group's role mappings, a client's or scope's scope."""
        return owner.scope_roles if self.kind in _SCOPED else owner.roles

    def effective(self, owner):
        """The roles the owner has (users, groups) or may put in a token (``None``: every role,
        a client with full scope allowed): the ``composite`` view."""
        if self.kind == "users":
            return effective_roles(owner)
        if self.kind == "clients" and owner.full_scope_allowed:
            return None
        if self.kind in _SCOPED:
            return expand_composites(set(owner.scope_roles.select_related("client")))
        groups = group_with_ancestors([owner])
        return expand_composites(set(Role.objects.filter(groups__in=groups).select_related("client")))


class RoleMappings(_Owner):
    required_role = "view-users"

    def get(self, request, realm, owner_id):
        roles = list(self.mapped(self.owner()).select_related("client").order_by("name"))
        rep = {}
        realm_roles = [brief_role_rep(r) for r in roles if r.client_id is None]
        if realm_roles:
            rep["realmMappings"] = realm_roles
        clients = {}
        for r in roles:
            if r.client_id is not None:
                entry = clients.setdefault(r.client.client_id, {"id": r.client_id, "client": r.client.client_id,
                                                                "mappings": []})
                entry["mappings"].append(brief_role_rep(r))
        if clients:
            rep["clientMappings"] = clients
        return Response(rep)


class RoleMappingScope(_Owner):
    required_role = USER_ROLES
    view = ""  # "", "composite" or "available"

    def _client(self, client_uuid):
        if client_uuid is None:
            return None
        client = self.row(Client, client_uuid)
        if client is None:
            raise errors.NotFound("Could not find client")
        return client

    def _event(self, operation, owner, client, roles):
        path = f"{self.kind}/{owner.pk}/{self.segment}/" + (f"clients/{client.pk}" if client else "realm")
        mapping = "SCOPE_MAPPING" if self.kind in _SCOPED else "ROLE_MAPPING"
        admin_events.record(self.realm, operation, f"{'CLIENT' if client else 'REALM'}_{mapping}", path,
                            auth=self.auth_details(), representation=[brief_role_rep(r) for r in roles])

    def get(self, request, realm, owner_id, client_uuid=None):
        owner, client = self.owner(), self._client(client_uuid)
        in_scope = Role.objects.filter(realm=self.realm, client=client).select_related("client")
        if self.view == "composite":
            effective = self.effective(owner)
            roles = in_scope if effective is None else in_scope.filter(pk__in={r.pk for r in effective})
        elif self.view == "available":
            roles = visible(request.user.admin, self.realm, "Roles",
                            in_scope.exclude(pk__in=self.mapped(owner).values("pk")), (_MAP_SCOPE[self.kind],))
        else:
            roles = in_scope.filter(pk__in=self.mapped(owner).values("pk"))
        return Response([brief_role_rep(r) for r in roles.order_by("name")])

    def _roles(self, client):
        reps = self.request.data
        if not isinstance(reps, list) or not all(isinstance(r, dict) for r in reps):
            raise errors.Invalid("Expected a list of RoleRepresentation")
        roles = []
        for rep in reps:
            found = Role.objects.filter(realm=self.realm, client=client)
            found = found.filter(pk=rep["id"]) if rep.get("id") else found.filter(name=rep.get("name"))
            role = found.select_related("client", "realm").first()
            if role is None:
                raise errors.NotFound("Role not found")
            if not self.request.user.may(("Roles", _MAP_SCOPE[self.kind]), self.realm, role):
                raise exceptions.PermissionDenied()
            roles.append(role)
        return roles

    def post(self, request, realm, owner_id, client_uuid=None):
        if self.view:
            return self.http_method_not_allowed(request)
        owner, client = self.owner(), self._client(client_uuid)
        roles = self._roles(client)
        with transaction.atomic():
            self.mapped(owner).add(*roles)
            self._event("CREATE", owner, client, roles)
        return Response(status=status.HTTP_204_NO_CONTENT)

    def delete(self, request, realm, owner_id, client_uuid=None):
        if self.view:
            return self.http_method_not_allowed(request)
        owner, client = self.owner(), self._client(client_uuid)
        roles = self._roles(client)
        with transaction.atomic():
            self.mapped(owner).remove(*roles)
            self._event("DELETE", owner, client, roles)
        return Response(status=status.HTTP_204_NO_CONTENT)
