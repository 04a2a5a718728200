"""Client policies (Keycloak's ``clientPolicies`` and ``clientProfiles``): the hook the protocol
code calls at each event a policy may act on. Filled by the client-policies work."""

# Keycloak's ClientPolicyEvent names, as the executors know them.
AUTHORIZATION_REQUEST = "AUTHORIZATION_REQUEST"
PUSHED_AUTHORIZATION_REQUEST = "PUSHED_AUTHORIZATION_REQUEST"
TOKEN_REQUEST = "TOKEN_REQUEST"
USERINFO_REQUEST = "USERINFO_REQUEST"
TOKEN_INTROSPECT = "TOKEN_INTROSPECT"
TOKEN_REVOKE = "TOKEN_REVOKE"
REGISTER = "REGISTER"
UPDATE = "UPDATE"


def enforce(event, realm_config, client_config, **context):
    """Run the executors of every policy whose conditions match ``client_config`` for ``event``;
    an executor refuses by raising an OAuthError. ``context`` names what the event has
    (``request``, ``params``, ``exchange``, ``authz``, ``claims``...)."""
    return None
