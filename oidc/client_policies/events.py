"""Keycloak's ClientPolicyEvent names, as the executors know them."""
AUTHORIZATION_REQUEST = "AUTHORIZATION_REQUEST"
PUSHED_AUTHORIZATION_REQUEST = "PUSHED_AUTHORIZATION_REQUEST"
TOKEN_REQUEST = "TOKEN_REQUEST"
USERINFO_REQUEST = "USERINFO_REQUEST"
TOKEN_INTROSPECT = "TOKEN_INTROSPECT"
TOKEN_REVOKE = "TOKEN_REVOKE"
REGISTER = "REGISTER"
UPDATE = "UPDATE"
# The token endpoint calls with TOKEN_REQUEST for every grant; Keycloak names an event per grant
# (TOKEN_REQUEST is the authorization code's), and its executors act on some of them only.
TOKEN_REFRESH = "TOKEN_REFRESH"
SERVICE_ACCOUNT_TOKEN_REQUEST = "SERVICE_ACCOUNT_TOKEN_REQUEST"
RESOURCE_OWNER_PASSWORD_CREDENTIALS_REQUEST = "RESOURCE_OWNER_PASSWORD_CREDENTIALS_REQUEST"
BACKCHANNEL_TOKEN_REQUEST = "BACKCHANNEL_TOKEN_REQUEST"
DEVICE_TOKEN_REQUEST = "DEVICE_TOKEN_REQUEST"
TOKEN_EXCHANGE_REQUEST = "TOKEN_EXCHANGE_REQUEST"
JWT_AUTHORIZATION_GRANT = "JWT_AUTHORIZATION_GRANT"
GRANT_EVENTS = {
    "authorization_code": TOKEN_REQUEST,
    "refresh_token": TOKEN_REFRESH,
    "client_credentials": SERVICE_ACCOUNT_TOKEN_REQUEST,
    "password": RESOURCE_OWNER_PASSWORD_CREDENTIALS_REQUEST,
    "urn:openid:params:grant-type:ciba": BACKCHANNEL_TOKEN_REQUEST,
    "urn:ietf:params:oauth:grant-type:device_code": DEVICE_TOKEN_REQUEST,
    "urn:ietf:params:oauth:grant-type:token-exchange": TOKEN_EXCHANGE_REQUEST,
    "urn:ietf:params:oauth:grant-type:jwt-bearer": JWT_AUTHORIZATION_GRANT,
}


def keycloak_event(event, params):
    """Keycloak's event for ``event``: a token request's is its grant's (a grant Keycloak has no
    event for: its own name, which no executor acts on)."""
    if event == TOKEN_REQUEST:
        grant_type = (params or {}).get("grant_type", "")
        return GRANT_EVENTS.get(grant_type, grant_type)
    return event
