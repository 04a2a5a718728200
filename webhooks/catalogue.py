"""The event catalogue: which realm events become which webhook event types.

User events (Keycloak's LOGIN, CODE_TO_TOKEN ...) become ``auth.<event in lower case>``; admin
events become ``<resource>.<action>`` from the resource type and the operation. Realm events not
listed here produce no webhook. docs/webhooks.md is the reader's copy of these tables; a test
keeps the two in step.
"""
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
