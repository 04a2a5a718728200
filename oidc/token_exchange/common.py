"""What the token exchanges share: RFC 8693's token type URIs, Keycloak's client attributes, the
refusal that records Keycloak's event reason, and reading one of our access tokens as a live
subject (or actor)."""
import threading
import time

from realms.data import rows
from realms.models import ClientSession

from .. import tokens
from ..errors import InvalidRequest
from ..services import live_subject

ACCESS_TOKEN = "urn:ietf:params:oauth:token-type:access_token"
REFRESH_TOKEN = "urn:ietf:params:oauth:token-type:refresh_token"
ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
JWT = "urn:ietf:params:oauth:token-type:jwt"
SAML2 = "urn:ietf:params:oauth:token-type:saml2"

# Client attributes (Keycloak's OIDCConfigAttributes).
STANDARD_ENABLED = "standard.token.exchange.enabled"
REFRESH_ENABLED = "standard.token.exchange.enableRefreshRequestedTokenType"
SAME_SESSION = "SAME_SESSION"


def standard_enabled(client):
    return (client.attributes or {}).get(STANDARD_ENABLED) == "true"


def refuse(exchange, error_class, description, event_error, reason=None, **kw):
    """Raise Keycloak's answer; its event records ``reason`` (the description when not given)."""
    exchange.details["reason"] = reason or description
    raise error_class(description, event_error=event_error, **kw)


def live_access_token(exchange, token, *, description="Invalid token", reason="subject_token validation failure",
                      requester=None):
    """(claims, user, user session or None, the requester's client session in it or None) of one
    of this realm's access tokens that is still live (signature, issuer, expiry, not revoked, its
    session with its client's session, client and user enabled: ``services.live_subject``'s
    rules, Keycloak's verifyIdentityToken); otherwise invalid_request ``description``.

    ``requester``: a client whose session in the same SSO session is read in the same query as
    the token client's: the standard exchange needs both, and one round trip instead of two is
    what keeps an exchange near the cost of a client-credentials grant."""
    try:
        # remember: a token exchanged again (a gateway's user calling one API after another) skips
        # parsing and the signature, as the Admin API's bearer does; every check after it still runs.
        claims = tokens.decode(exchange.realm, token, exchange.issuer, remember=True)
    except tokens.TokenError:
        claims = None
    found = None
    if claims is not None and claims.get("typ") == tokens.TYP_BEARER and isinstance(claims.get("exp"), int):
        found = _live(exchange.realm_config, claims, requester)
    if found is None:
        refuse(exchange, InvalidRequest, description, "invalid_token", reason)
    return (claims, *found)


def _live(realm_config, claims, requester):
    found = {}

    def has_client_session(user_session, client):
        found["requester"] = _client_sessions(user_session, client, requester)
        return found["requester"] is not False

    live = live_subject(realm_config, claims, check_revoked=True, has_client_session=has_client_session)
    if live is None:
        return None
    user, user_session, _ = live
    return user, user_session, found.get("requester")


# Client sessions seen lately, per process: (sid, client pk) -> (ClientSession or True, until).
# An exchange must know that the subject token's client still has its session in the SSO session
# and whether the requester has one; both are read in one query, and remembered for
# MEMO_SECONDS, so a gateway exchanging its users' tokens over and over does not pay a database
# round trip for each (the bench: docs/benchmarks.md). The SSO session and revocation are read on
# every exchange; only a client's own session ended inside a live SSO session is seen up to
# MEMO_SECONDS late (docs/decisions/0070-token-exchange.md).
MEMO_SECONDS = 2.0
MEMO_SIZE = 20000
_memo = {}
_memo_lock = threading.Lock()


def _remember(key, value, now):
    with _memo_lock:
        if len(_memo) >= MEMO_SIZE:
            _memo.clear()  # rare: everything is re-read once
        _memo[key] = (value, now + MEMO_SECONDS)


def _recall(key, now):
    entry = _memo.get(key)
    return entry[0] if entry is not None and entry[1] > now else None


def _client_sessions(user_session, token_client, requester):
    """The requester's client session in ``user_session`` (None when it has none); False when the
    token's client has no session there (the token is dead)."""
    now = time.monotonic()
    sid = user_session.pk
    has_token_client = _recall((sid, token_client.pk), now)
    requester_session = _recall((sid, requester.pk), now) if requester is not None else None
    if has_token_client is None or (requester is not None and requester_session is None):
        ids = list(dict.fromkeys([token_client.pk, *([requester.pk] if requester is not None else [])]))
        by_client = {row.client_id: row for row in rows.fetch(
            ClientSession, "user_session_id = %s AND client_id IN ({})".format(", ".join(["%s"] * len(ids))),
            [sid, *ids])}
        if token_client.pk not in by_client:
            return False
        _remember((sid, token_client.pk), True, now)
        requester_session = by_client.get(requester.pk) if requester is not None else None
        if requester_session is not None:
            _remember((sid, requester.pk), requester_session, now)
    if requester_session is not None:
        requester_session.user_session, requester_session.client = user_session, requester
    return requester_session


def remember_client_session(client_session):
    """A client session this request created: the next exchange need not read it."""
    _remember((client_session.user_session_id, client_session.client_id), client_session, time.monotonic())


def audiences(claims):
    aud = claims.get("aud")
    if aud is None:
        return []
    return [aud] if isinstance(aud, str) else [a for a in aud if isinstance(a, str)]
