"""Payload version v1: the objects fat payloads carry, as the Admin REST API represents them
(``realms.representation``), with every secret taken out.

A representation here is a contract: within v1 fields may be added, never renamed, retyped or
removed. A change that breaks that is a new version registered beside this one
(``catalogue.register_version``); endpoints on v1 keep receiving v1."""
from realms.audit.admin_events import SECRET_KEYS
from realms.models import Client, ClientScope, Group, Role, User
from realms.representation.client_scopes import scope_rep
from realms.representation.clients import client_rep
from realms.representation.groups import group_rep
from realms.representation.realm import realm_settings_rep
from realms.representation.roles import role_rep
from realms.representation.users import user_fields_rep

from .catalogue import ObjectKind, PayloadVersion


def without_secrets(value):
    """``value`` without the keys that hold secrets (one list with the admin events' masking)."""
    if isinstance(value, dict):
        return {k: without_secrets(v) for k, v in value.items() if k not in SECRET_KEYS}
    if isinstance(value, list):
        return [without_secrets(v) for v in value]
    return value


def _segments(event):
    return (event.resource_path or "").split("/")


def _user(event):
    """The user of a user event, or of an admin event on ``users/{id}``."""
    if event.kind == "admin":
        parts = _segments(event)
        user_id = parts[1] if len(parts) > 1 and parts[0] == "users" else ""
    else:
        user_id = event.user_id
    return User.objects.filter(realm_id=event.realm_id, pk=user_id).first() if user_id else None


def _by_pk(model, prefix):
    def load(event):
        parts = _segments(event)
        if len(parts) < 2 or parts[0] != prefix:
            return None
        return model.objects.filter(realm_id=event.realm_id, pk=parts[1]).first()
    return load


def _role(event):
    """``roles/{name}``, ``roles-by-id/{id}`` or ``clients/{uuid}/roles/{name}``."""
    parts = _segments(event)
    roles = Role.objects.filter(realm_id=event.realm_id)
    if len(parts) == 2 and parts[0] == "roles":
        return roles.filter(client__isnull=True, name=parts[1]).first()
    if len(parts) == 2 and parts[0] == "roles-by-id":
        return roles.filter(pk=parts[1]).first()
    if len(parts) == 4 and parts[0] == "clients" and parts[2] == "roles":
        return roles.filter(client_id=parts[1], name=parts[3]).first()
    return None


def _realm(event):
    return event.realm


def _role_rep(role):
    return role_rep(role, role.client_id or role.realm_id)


def _object_schema(title, properties, required=("id",)):
    return {"title": title, "type": "object", "required": list(required),
            "properties": properties, "additionalProperties": True}


_STR, _BOOL, _INT = {"type": "string"}, {"type": "boolean"}, {"type": "integer"}
_STRS, _MAP = {"type": "array", "items": _STR}, {"type": "object"}

USER = ObjectKind("UserRepresentation", _user, lambda u: without_secrets(user_fields_rep(u)), _object_schema(
    "UserRepresentation", {"id": _STR, "username": _STR, "email": _STR, "emailVerified": _BOOL, "firstName": _STR,
                           "lastName": _STR, "enabled": _BOOL, "attributes": _MAP, "requiredActions": _STRS,
                           "createdTimestamp": _INT, "notBefore": _INT}, ("id", "username", "createdTimestamp")))
CLIENT = ObjectKind("ClientRepresentation", _by_pk(Client, "clients"), lambda c: without_secrets(client_rep(c)),
                    _object_schema("ClientRepresentation", {
                        "id": _STR, "clientId": _STR, "name": _STR, "enabled": _BOOL, "protocol": _STR,
                        "publicClient": _BOOL, "redirectUris": _STRS, "webOrigins": _STRS, "attributes": _MAP,
                        "protocolMappers": {"type": "array", "items": _MAP},
                        "defaultClientScopes": _STRS, "optionalClientScopes": _STRS}, ("id", "clientId")))
GROUP = ObjectKind("GroupRepresentation", _by_pk(Group, "groups"),
                   lambda g: without_secrets(group_rep(g, {}, g.parent_id)), _object_schema(
                       "GroupRepresentation", {"id": _STR, "name": _STR, "path": _STR, "parentId": _STR,
                                               "attributes": _MAP, "realmRoles": _STRS, "clientRoles": _MAP},
                       ("id", "name", "path")))
ROLE = ObjectKind("RoleRepresentation", _role, lambda r: without_secrets(_role_rep(r)), _object_schema(
    "RoleRepresentation", {"id": _STR, "name": _STR, "description": _STR, "composite": _BOOL, "clientRole": _BOOL,
                           "containerId": _STR, "attributes": _MAP, "composites": _MAP}, ("id", "name")))
CLIENT_SCOPE = ObjectKind("ClientScopeRepresentation", _by_pk(ClientScope, "client-scopes"),
                          lambda s: without_secrets(scope_rep(s)), _object_schema(
                              "ClientScopeRepresentation", {"id": _STR, "name": _STR, "protocol": _STR,
                                                            "attributes": _MAP}, ("id", "name")))
REALM = ObjectKind("RealmRepresentation", _realm, lambda r: without_secrets(realm_settings_rep(r)), _object_schema(
    "RealmRepresentation", {"id": _STR, "realm": _STR, "enabled": _BOOL, "displayName": _STR, "attributes": _MAP},
    ("id", "realm")))

V1 = PayloadVersion(
    "v1", "The event's object as the Admin REST API of Keycloak 26 represents it, secrets left out: "
          "users (auth.* and user.*), clients, groups, realm and client roles, client scopes and the realm. "
          "Deleted objects and other resources carry no representation.",
    {"auth": USER, "user": USER, "client": CLIENT, "group": GROUP, "role": ROLE, "client_role": ROLE,
     "client_scope": CLIENT_SCOPE, "realm": REALM})
