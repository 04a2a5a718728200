"""OpenID Connect Client-Initiated Backchannel Authentication (CIBA Core 1.0), poll and ping, as
Keycloak does it.

- ``backchannel_authentication``: POST ``.../protocol/openid-connect/ext/ciba/auth`` by a
  confidential client with ``oidc.ciba.grant.enabled``; the user comes from ``login_hint``
  (username or e-mail, Keycloak's default resolver); the request goes to the authentication
  channel (``ciba_channel``) and the client gets ``auth_req_id``, ``expires_in``, ``interval``.
  A signed request object (``request``) is read by ``ciba_signed``.
- ``callback``: the channel's answer (``SUCCEED`` creates the user session, ``UNAUTHORIZED`` and
  ``CANCELLED`` deny); in ping mode the client's notification endpoint is told.
- ``ciba_grant``: ``urn:openid:params:grant-type:ciba`` at the token endpoint (AUTHREQID_TO_TOKEN).

The realm's policy is Keycloak's realm attributes (``cibaBackchannelTokenDeliveryMode``,
``cibaExpiresIn``, ``cibaInterval``, ``cibaAuthRequestedUserHint``), a client's delivery mode
and notification endpoint its attributes. Only SHA-256 digests of the auth_req_id and of the
channel token's id are stored. A pending poll is answered from the cache (state and poll clock)
without touching the database; redemption is a delete guarded by ``state = approved``.
"""
import re
import secrets
import time
from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from realms.audit.events import emit
from realms.data.crypto import decrypt, encrypt
from realms.models import User
from realms.sso import sessions
from realms.users.storage import find_user

from . import ciba_channel, ciba_signed, tokens
from .client_auth import authenticate
from .codes import digest
from .errors import (
    AccessDenied,
    AuthorizationPending,
    ExpiredToken,
    InvalidBindingMessage,
    InvalidGrant,
    InvalidRequest,
    InvalidScope,
    OAuthError,
    SlowDown,
    UnauthorizedClient,
)
from .grants import register_grant, session_tokens, token_endpoint_url
from .models import BackchannelAuthentication as Request
from .polling import PolledRequests

GRANT_TYPE = "urn:openid:params:grant-type:ciba"
FEATURE = "ciba"
POLL, PING = "poll", "ping"
LOGIN_HINT, ID_TOKEN_HINT, LOGIN_HINT_TOKEN = "login_hint", "id_token_hint", "login_hint_token"

# Keycloak's CibaConfig: realm attributes and their defaults, client attributes.
REALM_MODE, REALM_EXPIRES_IN, REALM_INTERVAL, REALM_USER_HINT = (
    "cibaBackchannelTokenDeliveryMode", "cibaExpiresIn", "cibaInterval", "cibaAuthRequestedUserHint")
DEFAULT_MODE, DEFAULT_EXPIRES_IN, DEFAULT_INTERVAL, DEFAULT_USER_HINT = POLL, 120, 5, LOGIN_HINT
GRANT_ENABLED = "oidc.ciba.grant.enabled"
CLIENT_MODE = "ciba.backchannel.token.delivery.mode"
CLIENT_NOTIFICATION_ENDPOINT = "ciba.backchannel.client.notification.endpoint"

NOT_ALLOWED = "Client not allowed OIDC CIBA Grant"
# Keycloak's binding message rule: at most 50 basic plain-text characters, no spaces.
BINDING_MESSAGE = re.compile(r"[a-zA-Z0-9\-._+/!?#]{1,50}")
NOTIFICATION_TOKEN_MAX = 1024
ACR_VALUES_MAX = 512
# Parameters whose copies would make the request ambiguous (RFC 6749 §3.2's rule, as the token endpoint).
SINGLE = ("scope", "login_hint", "login_hint_token", "id_token_hint", "binding_message", "acr_values",
          "requested_expiry", "client_notification_token", "user_code", "request", "request_uri")
STATES = {"SUCCEED", "UNAUTHORIZED", "CANCELLED"}


@dataclass(frozen=True)
class Policy:
    """Keycloak's CibaConfig of a realm."""

    mode: str
    expires_in: int
    interval: int
    user_hint: str

    def mode_of(self, client):
        return (client.attributes or {}).get(CLIENT_MODE) or self.mode


def _int(value, default):
    try:
        return int(value) if str(value or "").strip() else default
    except (TypeError, ValueError):
        return default


def policy(realm):
    attrs = realm.attributes or {}
    return Policy(mode=attrs.get(REALM_MODE) or DEFAULT_MODE,
                  expires_in=_int(attrs.get(REALM_EXPIRES_IN), DEFAULT_EXPIRES_IN),
                  interval=_int(attrs.get(REALM_INTERVAL), DEFAULT_INTERVAL),
                  user_hint=attrs.get(REALM_USER_HINT) or DEFAULT_USER_HINT)


def grant_enabled(client):
    # Keycloak reads the attribute with Boolean.parseBoolean: "true" in any case.
    return (client.attributes or {}).get(GRANT_ENABLED, "").lower() == "true"


def endpoint_url(issuer):
    return f"{issuer}/protocol/openid-connect/ext/ciba/auth"


# The cache's copy of a request: a pending poll reads no table (oidc.polling).
REQUESTS = PolledRequests("oidc:ciba", Request)
_remember, _forget = REQUESTS.remember, REQUESTS.forget


# The backchannel authentication endpoint --------------------------------------------------------

@dataclass
class Attempt:
    """What the endpoint's error event needs."""

    client_id: str = ""
    user_id: str = ""


def _event(realm, type, attempt, ip_address, error="", details=None, session_id=""):
    emit(realm, type, client_id=attempt.client_id, user_id=attempt.user_id, session_id=session_id,
         ip_address=ip_address, error=error, details=details or {})


def client_for(request, realm_config, issuer, params):
    """The authenticated client allowed to use CIBA; refusals are 401 (Keycloak wraps them so)."""
    config, method = authenticate(request, realm_config, params,
                                  audiences=(issuer, token_endpoint_url(issuer), endpoint_url(issuer)))
    client = config.client
    if client.public_client:
        # CIBA Core §4: the flow is for confidential clients only.
        raise UnauthorizedClient("Public client not allowed to use CIBA", status=401, event_error="not_allowed")
    if not grant_enabled(client):
        raise InvalidGrant(NOT_ALLOWED, status=401, event_error="not_allowed")
    return config


def resolve_user(realm, params, user_hint):
    """Keycloak's order: the hint the realm asks for must be present, then name an enabled user.
    Only ``login_hint`` resolves (Keycloak's default resolver knows no id_token_hint or
    login_hint_token, so a realm asking for them finds nobody)."""
    value = params.get(user_hint) if user_hint in (LOGIN_HINT, ID_TOKEN_HINT, LOGIN_HINT_TOKEN) else None
    if user_hint not in (LOGIN_HINT, ID_TOKEN_HINT, LOGIN_HINT_TOKEN):
        raise InvalidRequest("invalid user hint")
    if value is None:
        raise InvalidRequest(f"missing parameter : {user_hint}")
    user = find_user(realm, value) if user_hint == LOGIN_HINT and value else None
    if user is None or not user.enabled:
        raise InvalidRequest("invalid user", event_error="user_not_found")
    return user


def _requested_expiry(params, default):
    raw = params.get("requested_expiry")
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise InvalidRequest("Invalid requested_expiry") from None
    if value <= 0:
        raise InvalidRequest("Invalid requested_expiry")
    # The realm's cibaExpiresIn is the longest a request may wait; a client may ask for less.
    return min(value, default)


def _notification_token(params, mode, client):
    token = params.get("client_notification_token")
    if token is not None:
        if mode != PING:
            raise InvalidRequest("Client Notification token supported only for the ping mode")
        if len(token) > NOTIFICATION_TOKEN_MAX:
            raise InvalidRequest("Client Notification token length is limited to 1024 characters")
    elif mode == PING:
        raise InvalidRequest("Client Notification token needs to be provided with the ping mode")
    if mode == PING and not (client.attributes or {}).get(CLIENT_NOTIFICATION_ENDPOINT):
        raise InvalidRequest("Client notification endpoint not set for the client with the ping mode")
    return token or ""


def backchannel_authentication(request, realm_config, issuer, params, ip_address):
    """The endpoint's JSON answer; raises OAuthError (after the LOGIN_ERROR event once the
    client is known)."""
    realm = realm_config.realm
    attempt = Attempt(client_id=params.get("client_id", ""))
    try:
        config = client_for(request, realm_config, issuer, params)
        attempt.client_id = config.client_id
        return _authentication_request(realm, config, issuer, params, attempt, ip_address)
    except OAuthError as exc:
        _event(realm, "LOGIN_ERROR", attempt, ip_address, error=exc.event_error)
        raise


def _authentication_request(realm, config, issuer, params, attempt, ip_address):
    client = config.client
    for name in SINGLE:
        if len(params.getlist(name)) > 1:
            raise InvalidRequest("duplicated parameter")
    params = ciba_signed.read(params, client)
    pol = policy(realm)
    user = resolve_user(realm, params, pol.user_hint)
    attempt.user_id = user.pk
    scope = params.get("scope")
    if scope is None:
        raise InvalidRequest("missing parameter : scope")
    _, openid = tokens.resolve_scopes(config, scope)
    if not openid:
        # CIBA Core §7.1: an authentication request must contain the openid scope.
        raise InvalidScope("Missing openid scope")
    binding_message = params.get("binding_message")
    if binding_message is not None and not BINDING_MESSAGE.fullmatch(binding_message):
        raise InvalidBindingMessage(
            "the binding_message value has to be max 50 characters in length and must contain only basic "
            "plain-text characters without spaces")
    acr_values = params.get("acr_values") or ""
    if len(acr_values) > ACR_VALUES_MAX:
        raise InvalidRequest("Invalid acr_values")
    expires_in = _requested_expiry(params, pol.expires_in)
    mode = pol.mode_of(client)
    notification_token = _notification_token(params, mode, client)
    if params.get("user_code") is not None:
        raise InvalidRequest("User code not supported")

    auth_req_id, result_id = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    now = timezone.now()
    # Expired requests are left to the periodic purge (oidc.purges), as PAR's and the device grant's.
    row = Request.objects.create(
        digest=digest(auth_req_id), result_digest=digest(result_id), realm=realm, client=client, user=user,
        scope=scope, binding_message=binding_message or "", acr_values=acr_values,
        created=now, expires_at=now + timedelta(seconds=expires_in), interval=max(pol.interval, 0),
        notification_token=encrypt(notification_token) if mode == PING else "",
        sealed_auth_req_id=encrypt(auth_req_id) if mode == PING else "",
    )
    # Stored before the channel is asked: its callback may arrive before its own answer does.
    _remember(row)
    try:
        ciba_channel.request_authentication(row, config, user, issuer, result_id)
    except ciba_channel.ChannelError:
        Request.objects.filter(pk=row.pk).delete()
        _forget(row.pk)
        raise
    body = {"auth_req_id": auth_req_id, "expires_in": expires_in}
    if row.interval > 0:
        body["interval"] = row.interval
    return body


# The authentication channel's callback -------------------------------------------------------

def callback(realm_config, issuer, bearer, status, ip_address):
    """Approve or deny the request the channel's bearer token names; in ping mode, notify the
    client. Raises OAuthError (Keycloak's answers)."""
    realm = realm_config.realm
    row, claims = ciba_channel.verify_callback(realm_config, issuer, bearer)
    if row.state != Request.PENDING:
        # Keycloak's answer to a second callback: the request is cancelled.
        Request.objects.filter(pk=row.pk).delete()
        _forget(row.pk)
        raise ciba_channel.invalid_token()
    ciba_channel.check_recipient(realm_config, row, claims)
    attempt = Attempt(client_id=row.client.client_id, user_id=row.user_id)
    if status not in STATES:
        _event(realm, "LOGIN_ERROR", attempt, ip_address, error="invalid_request")
        raise InvalidRequest("Invalid authentication status")
    details = {"auth_method": "openid-connect", "auth_type": "ciba"}
    if status == "SUCCEED":
        with transaction.atomic():
            user_session = sessions.create_user_session(realm, row.user, ip_address=ip_address,
                                                        auth_methods=("ciba",))
            sessions.get_or_create_client_session(user_session, row.client, scope=row.scope)
            # A pending row only: a second callback for the same request changes nothing.
            moved = Request.objects.filter(pk=row.pk, state=Request.PENDING).update(
                state=Request.APPROVED, user_session=user_session)
            if not moved:
                transaction.set_rollback(True)
                raise ciba_channel.invalid_token()
            row.state, row.user_session = Request.APPROVED, user_session
            _event(realm, "LOGIN", attempt, ip_address, details=details, session_id=user_session.pk)
    else:
        if not Request.objects.filter(pk=row.pk, state=Request.PENDING).update(state=Request.DENIED):
            raise ciba_channel.invalid_token()
        row.state = Request.DENIED
        _event(realm, "LOGIN_ERROR", attempt, ip_address, details=details,
               error="not_allowed" if status == "CANCELLED" else "consent_denied")
    _remember(row)
    if policy(realm).mode_of(row.client) == PING:
        ciba_channel.notify_client(row.client, decrypt(row.sealed_auth_req_id), decrypt(row.notification_token))


# The token grant -----------------------------------------------------------------------------

def ciba_grant(exchange):
    client = exchange.client_config.client
    if client.public_client:
        raise UnauthorizedClient("Public client not allowed to use CIBA", event_error="not_allowed")
    if not grant_enabled(client):
        raise InvalidGrant(NOT_ALLOWED, event_error="not_allowed")
    auth_req_id = exchange.params.get("auth_req_id")
    if auth_req_id is None:
        raise InvalidRequest("Missing parameter: auth_req_id", event_error="invalid_code")
    request_digest = digest(auth_req_id)
    entry = REQUESTS.entry(request_digest) if auth_req_id else None
    if entry is None:
        raise InvalidGrant("Invalid Auth Req ID", event_error="invalid_code")
    if entry["client"] != client.pk:
        raise InvalidGrant("unauthorized client", event_error="invalid_client")
    now = time.time()
    if now >= entry["expires"]:
        Request.objects.filter(pk=request_digest).delete()
        _forget(request_digest)
        raise ExpiredToken("authentication timed out", event_error="expired_code")
    if not REQUESTS.poll_allowed(request_digest, entry["interval"]):
        raise SlowDown("too early to access", event_error="slow_down")
    if entry["state"] == Request.DENIED:
        raise AccessDenied("not authorized", status=400, event_error="access_denied")
    if entry["state"] == Request.PENDING:
        raise AuthorizationPending("The authorization request is still pending as the end-user hasn't yet "
                                   "been authenticated.", event_error="authorization_pending")
    return _redeem(exchange, request_digest)


_COLUMNS = ("user_id", "user_session_id", "scope")


def _redeem(exchange, request_digest):
    row = REQUESTS.redeem(request_digest, exchange.client_config.client, _COLUMNS)
    if row is None:  # redeemed meanwhile by a concurrent poll
        raise InvalidGrant("Invalid Auth Req ID", event_error="invalid_code")
    realm = exchange.realm
    exchange.user_id, exchange.session_id = row["user_id"], row["user_session_id"] or ""
    exchange.details["code_id"] = request_digest[:16]
    user_session = sessions.get_valid_session(realm, row["user_session_id"]) if row["user_session_id"] else None
    # The user comes with their session; without it (it ends with a user disabled since the
    # approval) the user's row says why.
    user = user_session.user if user_session is not None else User.objects.filter(pk=row["user_id"]).first()
    if user is None or not user.enabled:
        raise InvalidGrant("User disabled", event_error="user_disabled")
    if user.required_actions:
        raise InvalidGrant("Account is not fully set up", event_error="resolve_required_actions")
    if user_session is None:
        raise InvalidGrant("User session is not found", event_error="user_session_not_found")
    client_session = sessions.client_session_of(user_session, exchange.client_config.client)
    if client_session is None:
        raise InvalidGrant("User session is not found", event_error="user_session_not_found")
    scopes, openid = tokens.resolve_scopes(exchange.client_config, row["scope"])
    return session_tokens(exchange, "AUTHREQID_TO_TOKEN", user, scopes, openid, user_session, client_session)


def register():
    register_grant(GRANT_TYPE, ciba_grant, "AUTHREQID_TO_TOKEN", feature=FEATURE)
