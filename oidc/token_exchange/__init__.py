"""OAuth 2.0 Token Exchange (RFC 8693) at the token endpoint, as Keycloak 26 runs it.

One grant type, ``urn:ietf:params:oauth:grant-type:token-exchange``, event TOKEN_EXCHANGE, and
several exchanges behind it, chosen as Keycloak's TokenExchangeGrantType chooses its providers
(each says whether it supports the request; the first that does runs; when none does, the last
reason is the answer, invalid_request):

- delegation (feature ``token-exchange-delegation``, preview): an ``actor_token`` was sent;
- standard (feature ``token-exchange-standard``, "V2"): ``standard``;
- legacy V1 (feature ``token-exchange``, preview): ``legacy``: a brokered provider's token
  (``subject_issuer``) for ours, and impersonation (``requested_subject``).

The grant is available while any of these features is on (Keycloak: any version of the
token-exchange feature); discovery lists it then. See docs/decisions/0070-token-exchange.md.
"""
from realms import features

from ..errors import InvalidRequest
from ..grants import GRANT_TYPES, Grant
from . import common, legacy, standard

GRANT_TYPE = "urn:ietf:params:oauth:grant-type:token-exchange"
EVENT = "TOKEN_EXCHANGE"
STANDARD, LEGACY, DELEGATION = "token-exchange-standard", "token-exchange", "token-exchange-delegation"


class _ExchangeGrant(Grant):
    """Available while standard or legacy token exchange is on."""

    def available(self):
        return features.enabled(STANDARD) or features.enabled(LEGACY)


def exchange_tokens(exchange):
    params = exchange.params
    exchange.details["auth_method"] = "token_exchange"
    if params.get("actor_token") is not None:
        # Without the delegation feature an actor token is refused, never ignored: a client asking
        # to act for someone must not get a token that says nothing of it.
        if not features.enabled(DELEGATION):
            common.refuse(exchange, InvalidRequest, "Parameter 'actor_token' is not supported", "invalid_request",
                          "token exchange delegation disabled")
        if not common.standard_enabled(exchange.client_config.client):
            common.refuse(exchange, InvalidRequest, "Standard token exchange is not enabled for the requested client",
                          "invalid_request")
        return standard.exchange(exchange, delegation=True)
    reason = standard.unsupported_reason(exchange)
    if reason is None and features.enabled(STANDARD):
        return standard.exchange(exchange)
    if features.enabled(LEGACY):
        return legacy.exchange(exchange)
    common.refuse(exchange, InvalidRequest, reason or "Standard token exchange is disabled", "invalid_request")


def register():
    GRANT_TYPES.add(GRANT_TYPE, _ExchangeGrant(exchange_tokens, EVENT))
