"""Role mappings of a user or a group (Keycloak's RoleMapperResource and ClientRoleMappingsResource):
``{users|groups}/{id}/role-mappings`` (MappingsRepresentation), ``.../realm`` and
``.../clients/{client}`` with GET, POST (add) and DELETE (remove) of a list of RoleRepresentation
found by id or name, and the ``composite`` (effective) and ``available`` (not yet effective)
views. Users and groups are governed by ``view-users`` and ``manage-users``, as in Keycloak."""
from django.db import transaction
from rest_framework import status
from rest_framework.response import Response

from .. import admin_events
from ..models import Client, Group, Role, User, effective_roles, expand_composites, group_with_ancestors
from . import errors
from .reps import brief_role_rep
from .views import RealmResource


class _Owner(RealmResource):
    """``kind`` is "users" or "groups"; the owner's id is the ``owner_id`` path argument."""

    kind = "users"

    def owner(self):
        model, missing = (User, "User not found") if self.kind == "users" else (Group, "Could not find group by id")
        owner = model.objects.filter(realm=self.realm, pk=self.kwargs["owner_id"]).first()
        if owner is None:
            raise errors.NotFound(missing)
        return owner

    def effective(self, owner):
        if self.kind == "users":
            return effective_roles(owner)
        groups = group_with_ancestors([owner])
        return expand_composites(set(Role.objects.filter(groups__in=groups).select_related("client")))


class RoleMappings(_Owner):
    required_role = "view-users"

    def get(self, request, realm, owner_id):
        roles = list(self.owner().roles.select_related("client").order_by("name"))
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
    required_role = {"GET": "view-users", "POST": "manage-users", "DELETE": "manage-users"}
    view = ""  # "", "composite" or "available"

    def _client(self, client_uuid):
        if client_uuid is None:
            return None
        client = Client.objects.filter(realm=self.realm, pk=client_uuid).first()
        if client is None:
            raise errors.NotFound("Could not find client")
        return client

    def _event(self, operation, owner, client, roles):
        path = f"{self.kind}/{owner.pk}/role-mappings/" + (f"clients/{client.pk}" if client else "realm")
        admin_events.record(self.realm, operation, "CLIENT_ROLE_MAPPING" if client else "REALM_ROLE_MAPPING", path,
                            auth=self.auth_details(), representation=[brief_role_rep(r) for r in roles])

    def get(self, request, realm, owner_id, client_uuid=None):
        owner, client = self.owner(), self._client(client_uuid)
        in_scope = Role.objects.filter(realm=self.realm, client=client).select_related("client")
        if not self.view:
            roles = in_scope.filter(pk__in=owner.roles.values("pk"))
        else:
            effective = {r.pk for r in self.effective(owner)}
            roles = in_scope.filter(pk__in=effective) if self.view == "composite" else in_scope.exclude(pk__in=effective)
        return Response([brief_role_rep(r) for r in roles.order_by("name")])

    def _roles(self, client):
        reps = self.request.data
        if not isinstance(reps, list) or not all(isinstance(r, dict) for r in reps):
            raise errors.Invalid("Expected a list of RoleRepresentation")
        roles = []
        for rep in reps:
            found = Role.objects.filter(realm=self.realm, client=client)
            found = found.filter(pk=rep["id"]) if rep.get("id") else found.filter(name=rep.get("name"))
            role = found.first()
            if role is None:
                raise errors.NotFound("Role not found")
            roles.append(role)
        return roles

    def post(self, request, realm, owner_id, client_uuid=None):
        if self.view:
            return self.http_method_not_allowed(request)
        owner, client = self.owner(), self._client(client_uuid)
        roles = self._roles(client)
        with transaction.atomic():
            owner.roles.add(*roles)
            self._event("CREATE", owner, client, roles)
        return Response(status=status.HTTP_204_NO_CONTENT)

    def delete(self, request, realm, owner_id, client_uuid=None):
        if self.view:
            return self.http_method_not_allowed(request)
        owner, client = self.owner(), self._client(client_uuid)
        roles = self._roles(client)
        with transaction.atomic():
            owner.roles.remove(*roles)
            self._event("DELETE", owner, client, roles)
        return Response(status=status.HTTP_204_NO_CONTENT)
