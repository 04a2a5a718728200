"""Realm roles (``/roles``), client roles (``/clients/{id}/roles``), ``roles-by-id`` and the users
holding a role (Keycloak's RoleContainerResource and RoleByIdResource), in the export's JSON
(``role_rep``)."""
from django.db import transaction
from rest_framework import exceptions, status
from rest_framework.response import Response

from ..audit import admin_events
from ..models import Client, Role
from ..representation import RepresentationError
from ..representation.fields import Parser, as_multi_map, as_str, model_fields
from ..representation.roles import role_rep
from . import errors
from .query import flag, location, page
from .reps import brief_role_rep, brief_user_rep
from .views import RealmResource

_EDITABLE = {"name": ("name", as_str), "description": ("description", as_str),
             "attributes": ("attributes", as_multi_map)}


def _rep(role):
    return role_rep(role, role.client_id or role.realm_id)


def _values(data):
    if not isinstance(data, dict):
        raise errors.Invalid("Expected a RoleRepresentation")
    try:
        values = Parser().take(data, "", {k: c for k, (_, c) in _EDITABLE.items()})
    except RepresentationError as exc:
        raise errors.Invalid(str(exc)) from None
    return model_fields(_EDITABLE, values)


class _Container(RealmResource):
    """Roles of the realm (no ``client_uuid``) or of one of its clients."""

    def container(self):
        uuid = self.kwargs.get("client_uuid")
        if uuid is None:
            return None
        client = self.row(Client, uuid)
        if client is None:
            raise errors.NotFound("Could not find client")
        return client

    def role(self, name):
        role = Role.objects.filter(realm=self.realm, client=self.container(), name=name).first()
        if role is None:
            raise errors.NotFound("Could not find role")
        return role

    def roles_path(self, client):
        return f"clients/{client.pk}/roles" if client else "roles"

    def resource_type(self, client):
        return "CLIENT_ROLE" if client else "REALM_ROLE"


# Who lists the realm's roles (Keycloak's RolePermissions.canList: view-realm or a query role).
REALM_ROLE_LISTERS = ("view-realm", "query-users", "query-clients", "query-groups", "query-realms")


class Roles(_Container):
    """The container's roles, not narrowed (roles have no view scope), listed as Keycloak's
    ``RolePermissions.canList``: the realm's to ``REALM_ROLE_LISTERS``, a client's to whoever may
    list that client (``query-clients``, or a permission to view it)."""

    @property
    def required_role(self):
        client = self.kwargs.get("client_uuid")
        return ({"GET": "query-clients", "POST": "manage-clients"} if client
                else {"GET": REALM_ROLE_LISTERS, "POST": "manage-realm"})

    def get(self, request, realm, client_uuid=None):
        roles = Role.objects.filter(realm=self.realm, client=self.container()).select_related("client").order_by("name")
        search = request.query_params.get("search")
        if search:
            roles = roles.filter(name__icontains=search)
        brief = flag(request, "briefRepresentation", True)
        return Response([brief_role_rep(r) if brief else _rep(r) for r in page(request, roles, default_max=None)])

    def post(self, request, realm, client_uuid=None):
        client = self.container()
        fields = _values(request.data)
        if not fields.get("name"):
            raise errors.Invalid("Role name is missing")
        if Role.objects.filter(realm=self.realm, client=client, name=fields["name"]).exists():
            raise errors.Conflict(f"Role with name {fields['name']} already exists")
        with transaction.atomic():
            role = Role.objects.create(realm=self.realm, client=client, **fields)
            admin_events.record(self.realm, "CREATE", self.resource_type(client),
                                f"{self.roles_path(client)}/{role.name}", auth=self.auth_details(),
                                representation=lambda: _rep(role))
        return Response(status=status.HTTP_201_CREATED,
                        headers={"Location": location(request, f"{self.realm.name}/{self.roles_path(client)}/{role.name}")})


class RoleDetail(_Container):
    @property
    def required_role(self):
        return ({"GET": "view-clients", "PUT": "manage-clients", "DELETE": "manage-clients"}
                if self.kwargs.get("client_uuid")
                else {"GET": "view-realm", "PUT": "manage-realm", "DELETE": "manage-realm"})

    def get(self, request, realm, role_name, client_uuid=None):
        return Response(_rep(self.role(role_name)))

    def put(self, request, realm, role_name, client_uuid=None):
        role = self.role(role_name)
        fields = _values(request.data)
        if fields.get("name") and fields["name"] != role.name and Role.objects.filter(
                realm=self.realm, client_id=role.client_id, name=fields["name"]).exists():
            raise errors.Conflict(f"Role with name {fields['name']} already exists")
        for name, value in fields.items():
            setattr(role, name, value)
        with transaction.atomic():
            role.save()
            admin_events.record(self.realm, "UPDATE", self.resource_type(role.client),
                                f"{self.roles_path(role.client)}/{role.name}", auth=self.auth_details(),
                                representation=lambda: _rep(role))
        return Response(status=status.HTTP_204_NO_CONTENT)

    def delete(self, request, realm, role_name, client_uuid=None):
        role = self.role(role_name)
        if self.realm.default_role_id == role.pk:
            raise errors.Invalid("You cannot delete a default role")
        with transaction.atomic():
            admin_events.record(self.realm, "DELETE", self.resource_type(role.client),
                                f"{self.roles_path(role.client)}/{role.name}", auth=self.auth_details())
            role.delete()
        return Response(status=status.HTTP_204_NO_CONTENT)


class RoleComposites(_Container):
    """GET, POST (add) and DELETE (remove) a list of RoleRepresentation found by id (or name in
    the realm), as Keycloak's ``/roles/{name}/composites``: each role added is one the caller may
    put into a composite (``map-role-composite``, Keycloak's requireMapComposite); removing
    needs the container's role alone."""

    @property
    def required_role(self):
        return ({"GET": "view-clients", "POST": "manage-clients", "DELETE": "manage-clients"}
                if self.kwargs.get("client_uuid")
                else {"GET": "view-realm", "POST": "manage-realm", "DELETE": "manage-realm"})

    def get(self, request, realm, role_name, client_uuid=None):
        role = self.role(role_name)
        return Response([_rep(r) for r in role.composites.select_related("client").order_by("name")])

    def _targets(self, operation):
        reps = self.request.data
        if not isinstance(reps, list) or not all(isinstance(r, dict) for r in reps):
            raise errors.Invalid("Expected a list of RoleRepresentation")
        out = []
        for rep in reps:
            found = Role.objects.filter(realm=self.realm)
            found = found.filter(pk=rep["id"]) if rep.get("id") else found.filter(client=None, name=rep.get("name"))
            target = found.select_related("client", "realm").first()
            if target is None:
                raise errors.NotFound("Could not find composite role")
            if operation == "CREATE" and not self.request.user.may(("Roles", "map-role-composite"), self.realm, target):
                raise exceptions.PermissionDenied()
            out.append(target)
        return out

    def _change(self, role_name, operation):
        role = self.role(role_name)
        targets = self._targets(operation)
        with transaction.atomic():
            (role.composites.add if operation == "CREATE" else role.composites.remove)(*targets)
            admin_events.record(self.realm, operation, self.resource_type(role.client),
                                f"{self.roles_path(role.client)}/{role.name}/composites", auth=self.auth_details(),
                                representation=[brief_role_rep(t) for t in targets])
        return Response(status=status.HTTP_204_NO_CONTENT)

    def post(self, request, realm, role_name, client_uuid=None):
        return self._change(role_name, "CREATE")

    def delete(self, request, realm, role_name, client_uuid=None):
        return self._change(role_name, "DELETE")


class RoleUsers(_Container):
    """The users the role is mapped to directly (Keycloak's ``/roles/{name}/users``)."""

    @property
    def required_role(self):
        return "view-clients" if self.kwargs.get("client_uuid") else "view-users"

    def get(self, request, realm, role_name, client_uuid=None):
        users = self.role(role_name).users.order_by("username").select_related("service_account_client")
        return Response([brief_user_rep(u) for u in page(request, users)])


class RoleById(RealmResource):
    required_role = {"GET": "view-realm", "PUT": "manage-realm", "DELETE": "manage-realm"}

    def role(self, role_id):
        role = self.row(Role, role_id)
        if role is None:
            raise errors.NotFound("Could not find role with id")
        return role

    def get(self, request, realm, role_id):
        return Response(_rep(self.role(role_id)))

    def put(self, request, realm, role_id):
        role = self.role(role_id)
        for name, value in _values(request.data).items():
            setattr(role, name, value)
        with transaction.atomic():
            role.save()
            admin_events.record(self.realm, "UPDATE", "CLIENT_ROLE" if role.client_id else "REALM_ROLE",
                                f"roles-by-id/{role.pk}", auth=self.auth_details(), representation=lambda: _rep(role))
        return Response(status=status.HTTP_204_NO_CONTENT)

    def delete(self, request, realm, role_id):
        role = self.role(role_id)
        if self.realm.default_role_id == role.pk:
            raise errors.Invalid("You cannot delete a default role")
        with transaction.atomic():
            admin_events.record(self.realm, "DELETE", "CLIENT_ROLE" if role.client_id else "REALM_ROLE",
                                f"roles-by-id/{role.pk}", auth=self.auth_details())
            role.delete()
        return Response(status=status.HTTP_204_NO_CONTENT)
