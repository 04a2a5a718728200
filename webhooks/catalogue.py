"""The event catalogue: which realm events become which webhook event types.

User events (Keycloak's LOGIN, CODE_TO_TOKEN ...) become ``auth.<event in lower case>``; admin
events become ``<resource>.<action>`` from the resource type and the operation. Realm events not
listed here produce no webhook. docs/webhooks.md is the reader's copy of these tables; a test
keeps the two in step.

Fat payloads carry the event's object as the Admin REST API represents it. What each payload
version carries per resource is a ``PayloadVersion`` in ``VERSIONS`` (v1 registered from
``WebhooksConfig.ready``, ``webhooks.snapshots``); an endpoint keeps its version, so a new one is
added beside the old ones and never changes what an endpoint on an older version receives. The
JSON Schemas and the AsyncAPI document are generated from here (``webhooks.schemas``).
"""
from dataclasses import dataclass, field

from realms.registry import Registry

USER_EVENTS = [
    "LOGIN", "LOGIN_ERROR", "LOGOUT", "LOGOUT_ERROR",
    "CODE_TO_TOKEN", "CODE_TO_TOKEN_ERROR",
    "REFRESH_TOKEN", "REFRESH_TOKEN_ERROR",
    "CLIENT_LOGIN", "CLIENT_LOGIN_ERROR",
    "TOKEN_EXCHANGE", "TOKEN_EXCHANGE_ERROR",
    "INTROSPECT_TOKEN", "INTROSPECT_TOKEN_ERROR",
    "REVOKE_GRANT", "REVOKE_GRANT_ERROR",
    "OAUTH2_DEVICE_AUTH", "OAUTH2_DEVICE_VERIFY_USER_CODE",
    "OAUTH2_DEVICE_CODE_TO_TOKEN", "OAUTH2_DEVICE_CODE_TO_TOKEN_ERROR",
    "AUTHREQID_TO_TOKEN", "AUTHREQID_TO_TOKEN_ERROR",
    "CLIENT_REGISTER", "CLIENT_UPDATE", "CLIENT_DELETE",
    "USER_INFO_REQUEST", "USER_INFO_REQUEST_ERROR",
    "REGISTER",
    "UPDATE_PASSWORD", "UPDATE_PASSWORD_ERROR", "UPDATE_PROFILE", "UPDATE_EMAIL",
    "SEND_RESET_PASSWORD", "RESET_PASSWORD",
    "SEND_VERIFY_EMAIL", "VERIFY_EMAIL",
    "UPDATE_TOTP", "REMOVE_TOTP", "UPDATE_CREDENTIAL", "REMOVE_CREDENTIAL",
    "IDENTITY_PROVIDER_LOGIN_ERROR", "IDENTITY_PROVIDER_LINK_ACCOUNT",
    "IMPERSONATE", "GRANT_CONSENT",
]

# Keycloak admin-event resource types -> webhook resource names.
ADMIN_RESOURCES = {
    "REALM": "realm",
    "USER": "user",
    "CLIENT": "client",
    "CLIENT_SCOPE": "client_scope",
    "CLIENT_SCOPE_MAPPING": "client_scope_mapping",
    "CLIENT_SCOPE_CLIENT_MAPPING": "client_scope_mapping",
    "GROUP": "group",
    "GROUP_MEMBERSHIP": "group_membership",
    "REALM_ROLE": "role",
    "CLIENT_ROLE": "client_role",
    "REALM_ROLE_MAPPING": "role_mapping",
    "CLIENT_ROLE_MAPPING": "client_role_mapping",
    "PROTOCOL_MAPPER": "protocol_mapper",
    "USER_SESSION": "session",
    "CLIENT_INITIAL_ACCESS_MODEL": "client_initial_access",
    "IDENTITY_PROVIDER": "identity_provider",
    "IDENTITY_PROVIDER_MAPPER": "identity_provider_mapper",
    "COMPONENT": "component",
    "AUTH_FLOW": "auth_flow",
    "AUTH_EXECUTION": "auth_execution",
    "REQUIRED_ACTION": "required_action",
    "USER_FEDERATION_PROVIDER": "user_federation_provider",
    "ORGANIZATION": "organization",
}

ADMIN_OPERATIONS = {"CREATE": "created", "UPDATE": "updated", "DELETE": "deleted", "ACTION": "action"}

_USER = {name: "auth." + name.lower() for name in USER_EVENTS}


def webhook_type(event):
    """The webhook type of a realm Event, or None when the catalogue has no entry for it."""
    if event.kind == "admin":
        resource = ADMIN_RESOURCES.get(event.resource_type)
        action = ADMIN_OPERATIONS.get(event.type)
        return f"{resource}.{action}" if resource and action else None
    return _USER.get(event.type)


def all_types():
    types = set(_USER.values())
    types.update(f"{r}.{a}" for r in ADMIN_RESOURCES.values() for a in ADMIN_OPERATIONS.values())
    return sorted(types)


def payload_data(event, realm_name):
    """The ``data`` of a webhook: ids and a few common fields, never a representation (which can
    carry secrets); receivers fetch the current object from the admin API when they need it."""
    if event.kind == "admin":
        path = event.resource_path or ""
        data = {
            "realm": realm_name,
            "eventId": event.id,
            "resourceType": event.resource_type,
            "resourcePath": path,
            "resourceId": path.rsplit("/", 1)[-1] if path else "",
            "operationType": event.type,
        }
    else:
        data = {
            "realm": realm_name,
            "eventId": event.id,
            "eventType": event.type,
            "clientId": event.client_id,
            "userId": event.user_id,
            "sessionId": event.session_id,
            "ipAddress": event.ip_address,
        }
        if event.error:
            data["error"] = event.error
        if event.details:
            data["details"] = event.details
    return data


TEST_EVENT_TYPE = "webhook.test"


@dataclass(frozen=True)
class ObjectKind:
    """One object a fat payload carries: its Admin API name, how to find it for an event (None
    when it no longer exists), how the Admin API represents it (secrets taken out) and the JSON
    Schema of that representation (fields may be added within a version, never changed)."""

    name: str
    load: object
    represent: object
    schema: dict = field(default_factory=dict)


@dataclass(frozen=True)
class PayloadVersion:
    """``objects``: webhook resource (the type's part before the dot; ``auth`` for user events)
    -> the ObjectKind its fat payloads carry. A resource not listed carries none."""

    name: str
    description: str
    objects: dict


VERSIONS = Registry("webhook payload versions")


def register_version(version):
    VERSIONS.add(version.name, version)


def latest_version():
    return max(VERSIONS, key=lambda name: int(name.lstrip("v")))


def object_kind(event_type, version):
    return VERSIONS[version].objects.get(event_type.split(".", 1)[0])


def snapshot(event, version):
    """The representation a fat payload of ``version`` carries for the realm Event ``event``, or
    None (no object for its type, a deleted one, a test event)."""
    if event is None:
        return None
    kind = object_kind(webhook_type(event), version)
    if kind is None or (event.kind == "admin" and event.type == "DELETE"):
        return None
    obj = kind.load(event)
    return None if obj is None else kind.represent(obj)


def emitted_types():
    """Every type a message can have: the catalogue's and the test event."""
    return [*all_types(), TEST_EVENT_TYPE]


def version_catalogue():
    """What each payload version contains, as the API answers it."""
    latest = latest_version()
    return [{"version": v.name, "latest": v.name == latest, "description": v.description,
             "representations": {resource: kind.name for resource, kind in sorted(v.objects.items())}}
            for v in VERSIONS.by_key()]
