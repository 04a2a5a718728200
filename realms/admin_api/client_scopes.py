"""``/admin/realms/{realm}/client-scopes`` (Keycloak's ClientScopesResource and
ClientScopeResource), a client's ``default-client-scopes`` / ``optional-client-scopes`` and the
realm's ``default-default-client-scopes`` / ``default-optional-client-scopes``. Scopes in the
export's JSON (``scope_rep``, parsed by ``parse_scope``); the link lists are Keycloak's short
form, id and name."""
import re

from django.db import transaction
from rest_framework import status
from rest_framework.response import Response

from ..audit import admin_events
from ..models import ClientScope, ClientScopeLink, ProtocolMapper, RealmDefaultClientScope
from ..representation import RepresentationError
from ..representation.client_scopes import parse_scope, scope_rep
from ..representation.fields import Parser
from ..representation.protocol_mappers import check_mapper
from . import errors
from .clients import _client
from .query import check_fields, location
from .views import RealmResource

# Keycloak refuses a scope name with white space (it is a word of the ``scope`` parameter).
_NAME = re.compile(r"\S+")


def client_scope(realm, scope_id):
    scope = ClientScope.objects.filter(realm=realm, pk=scope_id).first()
    if scope is None:
        raise errors.NotFound("Could not find client scope")
    return scope


def _parse(data, name=None):
    if not isinstance(data, dict):
        raise errors.Invalid("Expected a ClientScopeRepresentation")
    body = data if name is None or "name" in data else {**data, "name": name}
    try:
        parsed = parse_scope(body, "", Parser())
    except RepresentationError as exc:
        raise errors.Invalid(str(exc)) from None
    parsed["fields"].pop("id", None)
    name = parsed["fields"]["name"]
    if not _NAME.fullmatch(name):
        raise errors.Invalid(f'Unexpected name "{name}" for ClientScope')
    return parsed


def _check_unique(realm, name, scope=None):
    others = ClientScope.objects.filter(realm=realm, name=name)
    if scope is not None:
        others = others.exclude(pk=scope.pk)
    if others.exists():
        raise errors.Conflict(f"Client Scope {name} already exists")


class ClientScopes(RealmResource):
    required_role = {"GET": "view-clients", "POST": "manage-clients"}

    def get(self, request, realm):
        scopes = ClientScope.objects.filter(realm=self.realm).prefetch_related("protocol_mappers")
        return Response([scope_rep(s) for s in scopes])

    def post(self, request, realm):
        parsed = _parse(request.data)
        scope = ClientScope(realm=self.realm, **parsed["fields"])
        _check_unique(self.realm, scope.name)
        check_fields(scope)
        with transaction.atomic():
            scope.save()
            for m in parsed["mappers"]:
                mapper = ProtocolMapper(client_scope=scope, **{k: v for k, v in m["fields"].items() if k != "id"})
                try:
                    check_mapper(mapper, m["_path"])
                except RepresentationError as exc:
                    raise errors.Invalid(str(exc)) from None
                mapper.save()
            admin_events.record(self.realm, "CREATE", "CLIENT_SCOPE", f"client-scopes/{scope.pk}",
                                auth=self.auth_details(), representation=lambda: scope_rep(scope))
        return Response(status=status.HTTP_201_CREATED,
                        headers={"Location": location(request, f"{self.realm.name}/client-scopes/{scope.pk}")})


class ClientScopeDetail(RealmResource):
    required_role = {"GET": "view-clients", "PUT": "manage-clients", "DELETE": "manage-clients"}

    def get(self, request, realm, scope_id):
        return Response(scope_rep(client_scope(self.realm, scope_id)))

    def put(self, request, realm, scope_id):
        """The keys given are changed (as Keycloak's updateClientScope); protocol mappers are
        changed through their own resource."""
        scope = client_scope(self.realm, scope_id)
        parsed = _parse(request.data, scope.name)
        _check_unique(self.realm, parsed["fields"]["name"], scope)
        for name, value in parsed["fields"].items():
            setattr(scope, name, value)
        check_fields(scope)
        with transaction.atomic():
            scope.save()
            admin_events.record(self.realm, "UPDATE", "CLIENT_SCOPE", f"client-scopes/{scope.pk}",
                                auth=self.auth_details(), representation=lambda: scope_rep(scope))
        return Response(status=status.HTTP_204_NO_CONTENT)

    def delete(self, request, realm, scope_id):
        scope = client_scope(self.realm, scope_id)
        with transaction.atomic():  # its links to clients and the realm's defaults go with it
            admin_events.record(self.realm, "DELETE", "CLIENT_SCOPE", f"client-scopes/{scope.pk}",
                                auth=self.auth_details())
            scope.delete()
        return Response(status=status.HTTP_204_NO_CONTENT)


def _short(scope):
    return {"id": scope.pk, "name": scope.name}


def _linked_scope(realm, scope_id):
    scope = ClientScope.objects.filter(realm=realm, pk=scope_id).first()
    if scope is None:
        raise errors.NotFound("Client scope not found")
    return scope


class _ClientLinks(RealmResource):
    """``/clients/{id}/default-client-scopes`` (``default=True``) or ``optional-client-scopes``:
    GET lists them, PUT ``/{scopeId}`` links a scope (a scope already linked either way stays as
    it is, as in Keycloak), DELETE ``/{scopeId}`` unlinks it. ``default`` is set per route."""

    required_role = {"GET": "view-clients", "PUT": "manage-clients", "DELETE": "manage-clients"}
    default = True

    def _change(self, client_uuid, scope_id, operation):
        client = _client(self.realm, client_uuid)
        scope = _linked_scope(self.realm, scope_id)
        kind = "default" if self.default else "optional"
        with transaction.atomic():
            if operation == "CREATE":
                ClientScopeLink.objects.get_or_create(client=client, client_scope=scope,
                                                      defaults={"default": self.default})
            else:
                ClientScopeLink.objects.filter(client=client, client_scope=scope, default=self.default).delete()
            admin_events.record(self.realm, operation, "CLIENT", f"clients/{client.pk}/{kind}-client-scopes/{scope.pk}",
                                auth=self.auth_details(), representation=lambda: _short(scope))
        return Response(status=status.HTTP_204_NO_CONTENT)



class ClientLinkedScopes(_ClientLinks):
    def get(self, request, realm, client_uuid):
        client = _client(self.realm, client_uuid)
        links = client.scope_links.filter(default=self.default).select_related("client_scope")
        return Response([_short(link.client_scope) for link in links.order_by("client_scope__name")])


class ClientLinkedScope(_ClientLinks):
    def put(self, request, realm, client_uuid, scope_id):
        return self._change(client_uuid, scope_id, "CREATE")

    def delete(self, request, realm, client_uuid, scope_id):
        return self._change(client_uuid, scope_id, "DELETE")


class _RealmDefaults(RealmResource):
    """``/default-default-client-scopes`` (``default=True``) and ``/default-optional-client-scopes``:
    the scopes every new client gets. Reading needs ``view-clients``, changing ``manage-realm``
    (as Keycloak); PUT moves a scope from the other list."""

    required_role = {"GET": "view-clients", "PUT": "manage-realm", "DELETE": "manage-realm"}
    default = True

    def _change(self, scope_id, operation):
        scope = _linked_scope(self.realm, scope_id)
        kind = "default" if self.default else "optional"
        with transaction.atomic():
            if operation == "CREATE":
                RealmDefaultClientScope.objects.update_or_create(realm=self.realm, client_scope=scope,
                                                                 defaults={"default": self.default})
            else:
                self.realm.default_scope_links.filter(client_scope=scope, default=self.default).delete()
            admin_events.record(self.realm, operation, "REALM", f"default-{kind}-client-scopes/{scope.pk}",
                                auth=self.auth_details(), representation=lambda: _short(scope))
        return Response(status=status.HTTP_204_NO_CONTENT)



class RealmDefaultScopeList(_RealmDefaults):
    def get(self, request, realm):
        links = self.realm.default_scope_links.filter(default=self.default).select_related("client_scope")
        return Response([_short(link.client_scope) for link in links.order_by("client_scope__name")])


class RealmDefaultScope(_RealmDefaults):
    def put(self, request, realm, scope_id):
        return self._change(scope_id, "CREATE")

    def delete(self, request, realm, scope_id):
        return self._change(scope_id, "DELETE")
