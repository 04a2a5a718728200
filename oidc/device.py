"""OAuth 2.0 Device Authorization Grant (RFC 8628), as Keycloak runs it (feature ``device-flow``).

- ``device_authorization``: POST ``.../protocol/openid-connect/auth/device``; the client
  authenticates as at the token endpoint (a public client by ``client_id``) and must have the
  attribute ``oauth2.device.authorization.grant.enabled``; it gets ``device_code``, a user code
  (Keycloak's: eight letters A-Z, shown ``XXXX-XXXX``), ``verification_uri``
  (``{issuer}/device``), ``verification_uri_complete``, ``expires_in`` and ``interval`` (the
  client's ``oauth2.device.code.lifespan`` / ``oauth2.device.polling.interval``, else the realm's).
- ``device_code_grant``: ``urn:ietf:params:oauth:grant-type:device_code`` at the token endpoint
  (OAUTH2_DEVICE_CODE_TO_TOKEN), with Keycloak's order of checks and descriptions.
- The user-code page and the sign-in it starts are ``device_verification`` (which registers both).

Only SHA-256 digests of the device code and of the user code are stored. What a poll needs (the
client, the state, the expiry, the interval) is copied into the cache, and the poll clock lives
there only, so a pending poll reads and writes no table; approval and denial write the row first,
then the cache. Redemption deletes the approved row in one statement guarded by the state, which
returns what the tokens need: of two racing redemptions one deletes it; a row found expired is
deleted, and the others expired are left to the periodic purge (``oidc.purges``).
"""
import re
import secrets
import time
from dataclasses import dataclass
from datetime import timedelta
from types import SimpleNamespace

from django.db import IntegrityError, transaction
from django.utils import timezone

from realms.audit.events import emit
from realms.sso import sessions

from . import codes, consent, tokens
from .client_auth import authenticate
from .codes import digest
from .errors import (
    AccessDenied,
    AuthorizationPending,
    ExpiredToken,
    InvalidGrant,
    InvalidRequest,
    InvalidScope,
    OAuthError,
    SlowDown,
    UnauthorizedClient,
)
from .grants import register_grant, session_tokens, token_endpoint_url
from .models import DeviceAuthorization
from .polling import PolledRequests

GRANT_TYPE = "urn:ietf:params:oauth:grant-type:device_code"
FEATURE = "device-flow"
# Keycloak's client attributes (OAuth2DeviceConfig) and realm attribute.
GRANT_ENABLED = "oauth2.device.authorization.grant.enabled"
CLIENT_LIFESPAN = "oauth2.device.code.lifespan"
CLIENT_INTERVAL = "oauth2.device.polling.interval"
SHORT_VERIFICATION_URI = "shortVerificationUri"
# Keycloak's DefaultOAuth2DeviceUserCodeProvider: eight upper-case letters, shown as XXXX-XXXX.
USER_CODE_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
USER_CODE_LENGTH = 8
# Keycloak's noBackButtonCacheControlHeader on the endpoint's answer.
CACHE_CONTROL = "no-store, must-revalidate, max-age=0"

NOT_ALLOWED_AT_DEVICE = ("Client is not allowed to initiate OAuth 2.0 Device Authorization Grant. "
                         "The flow is disabled for the client.")
NOT_ALLOWED_AT_TOKEN = "Client not allowed OAuth 2.0 Device Authorization Grant"
INVALID_CODE = "Device code not valid"
# RFC 7636 §4.2: 43 to 128 unreserved characters.
_CHALLENGE = re.compile(r"[0-9A-Za-z\-.~_]{43,128}")
# Keycloak's event errors (org.keycloak.events.Errors).
INVALID_DEVICE_CODE, EXPIRED_DEVICE_CODE = "invalid_oauth2_device_code", "expired_oauth2_device_code"


def grant_enabled(client):
    # Keycloak reads the attribute with Boolean.parseBoolean: "true" in any case.
    return (client.attributes or {}).get(GRANT_ENABLED, "").strip().lower() == "true"


def _seconds(client, name, default):
    raw = (client.attributes or {}).get(name, "")
    try:
        return int(raw) if str(raw).strip() else default
    except ValueError:
        return default


def lifespan(realm, client):
    return _seconds(client, CLIENT_LIFESPAN, realm.oauth2_device_code_lifespan)


def polling_interval(realm, client):
    return max(_seconds(client, CLIENT_INTERVAL, realm.oauth2_device_polling_interval), 0)


def new_user_code():
    return "".join(secrets.choice(USER_CODE_ALPHABET) for _ in range(USER_CODE_LENGTH))


def display(user_code):
    return f"{user_code[:4]}-{user_code[4:]}"


def normalize(user_code):
    """As Keycloak's ``format``: without dashes (and, here, spaces people type), upper case."""
    return "".join(user_code.replace("-", "").split()).upper()


def verification_uri(realm, issuer):
    return (realm.attributes or {}).get(SHORT_VERIFICATION_URI) or f"{issuer}/device"


def endpoint_url(issuer):
    return f"{issuer}/protocol/openid-connect/auth/device"


# The cache's copy of a code: a pending poll reads no table (oidc.polling).
CODES = PolledRequests("oidc:device", DeviceAuthorization)
remember, forget = CODES.remember, CODES.forget


# The device authorization endpoint ---------------------------------------------------------------

@dataclass
class Attempt:
    client_id: str = ""


def device_authorization(request, realm_config, issuer, params, ip_address):
    """(the endpoint's JSON answer, the client's config); raises OAuthError after its
    OAUTH2_DEVICE_AUTH_ERROR event."""
    realm = realm_config.realm
    attempt = Attempt(client_id=params.get("client_id", "")[:255])
    details = {}
    try:
        config, method = authenticate(request, realm_config, params,
                                      audiences=(issuer, token_endpoint_url(issuer), endpoint_url(issuer)))
        attempt.client_id = config.client_id
        details["client_auth_method"] = method
        body = _authorize(realm, config, issuer, params, details)
    except OAuthError as exc:
        if exc.description and "reason" not in details:
            details["reason"] = exc.description
        emit(realm, "OAUTH2_DEVICE_AUTH_ERROR", client_id=attempt.client_id, ip_address=ip_address,
             error=exc.event_error, details=details)
        raise
    emit(realm, "OAUTH2_DEVICE_AUTH", client_id=attempt.client_id, ip_address=ip_address, details=details)
    return body, config


def _authorize(realm, config, issuer, params, details):
    client = config.client
    if any(len(values) > 1 for _, values in params.lists()):
        # Keycloak's request parser refuses a repeated parameter, answered as invalid_grant.
        raise InvalidGrant("duplicated parameter", event_error="invalid_request")
    if not grant_enabled(client):
        raise UnauthorizedClient(NOT_ALLOWED_AT_DEVICE, event_error="not_allowed")
    scope = params.get("scope", "")
    tokens.resolve_scopes(config, scope)  # InvalidScope for a scope the client may not ask for
    challenge, method = _pkce(client, params)
    expires_in, interval = lifespan(realm, client), polling_interval(realm, client)
    if expires_in <= 0:
        raise InvalidRequest("Invalid device code lifespan")
    # Rows nobody polled after their expiry are left to the periodic purge (oidc.purges).
    device_code = secrets.token_urlsafe(32)
    now = timezone.now()
    for _ in range(5):
        user_code = new_user_code()
        try:
            with transaction.atomic():
                row = DeviceAuthorization.objects.create(
                    digest=digest(device_code), user_code_digest=digest(user_code), realm=realm, client=client,
                    scope=scope, nonce=params.get("nonce", "")[:512], code_challenge=challenge,
                    code_challenge_method=method, created=now,
                    expires_at=now + timedelta(seconds=expires_in), interval=interval)
            break
        except IntegrityError:  # the user code of another pending request of this realm: draw again
            continue
    else:
        raise InvalidRequest("Could not allocate a user code")
    remember(row)
    details.update(scope=scope, code_id=row.digest[:16])
    uri = verification_uri(realm, issuer)
    shown = display(user_code)
    return {"device_code": device_code, "user_code": shown, "verification_uri": uri,
            "verification_uri_complete": f"{uri}?user_code={shown}", "expires_in": expires_in,
            "interval": interval}


def _pkce(client, params):
    """RFC 7636 on the device request, as Keycloak's AuthorizationEndpointChecker: required with
    the client's ``pkce.code.challenge.method`` (that method), else optional; (challenge, method)."""
    challenge, method = params.get("code_challenge"), params.get("code_challenge_method")
    required = client.pkce_method
    if required:
        if method is None:
            raise InvalidRequest("Missing parameter: code_challenge_method")
        if method != required:
            raise InvalidRequest("Invalid parameter: code challenge method is not matching the configured one")
        if challenge is None:
            raise InvalidRequest("Missing parameter: code_challenge")
    elif challenge is None:
        if method is not None:
            raise InvalidRequest("Missing parameter: code_challenge")
        return "", ""
    method = method or codes.PLAIN  # RFC 7636 §4.3
    if method not in (codes.S256, codes.PLAIN):
        raise InvalidRequest("Invalid parameter: code_challenge_method")
    if not _CHALLENGE.fullmatch(challenge):
        raise InvalidRequest("Invalid parameter: code_challenge")
    return challenge, method


# Approval and denial (from the user-code page's sign-in) ----------------------------------------

def approve(code_digest, user_session):
    """Pending and not expired -> approved with the user session; False when it was not."""
    moved = DeviceAuthorization.objects.filter(pk=code_digest, state=DeviceAuthorization.PENDING,
                                               expires_at__gt=timezone.now()).update(
        state=DeviceAuthorization.APPROVED, user_session=user_session)
    # The cache follows at once; should the sign-in's transaction roll back, the claim (guarded
    # by the row's state) still redeems nothing.
    _refresh(code_digest)
    return bool(moved)


def deny(code_digest):
    moved = DeviceAuthorization.objects.filter(pk=code_digest, state=DeviceAuthorization.PENDING,
                                               expires_at__gt=timezone.now()).update(state=DeviceAuthorization.DENIED)
    _refresh(code_digest)
    return bool(moved)


def _refresh(code_digest):
    row = DeviceAuthorization.objects.filter(pk=code_digest).first()
    if row is None:
        forget(code_digest)
    else:
        remember(row)


# The token grant -----------------------------------------------------------------------------------

def device_code_grant(exchange):
    client = exchange.client_config.client
    if not grant_enabled(client):
        raise InvalidGrant(NOT_ALLOWED_AT_TOKEN, event_error="not_allowed")
    device_code = exchange.params.get("device_code")
    if device_code is None:
        raise InvalidRequest("Missing parameter: device_code", event_error=INVALID_DEVICE_CODE)
    code_digest = digest(device_code)
    entry = CODES.entry(code_digest) if device_code else None
    if entry is None:
        raise InvalidGrant(INVALID_CODE, event_error=INVALID_DEVICE_CODE)
    exchange.details["code_id"] = code_digest[:16]
    if time.time() >= entry["expires"]:
        DeviceAuthorization.objects.filter(pk=code_digest).delete()
        forget(code_digest)
        raise ExpiredToken("Device code is expired", event_error=EXPIRED_DEVICE_CODE)
    if entry["client"] != client.pk:
        # Another client's code: refused before the poll clock, which it does not move.
        raise InvalidGrant("unauthorized client", event_error=INVALID_DEVICE_CODE)
    if not CODES.poll_allowed(code_digest, entry["interval"]):
        raise SlowDown("Slow down", event_error="slow_down")
    if entry["state"] == DeviceAuthorization.DENIED:
        raise AccessDenied("The end user denied the authorization request", status=400, event_error="access_denied")
    if entry["state"] == DeviceAuthorization.PENDING:
        raise AuthorizationPending("The authorization request is still pending")
    return _redeem(exchange, code_digest)


_COLUMNS = ("user_session_id", "scope", "nonce", "code_challenge", "code_challenge_method")


def _redeem(exchange, code_digest):
    realm, config = exchange.realm, exchange.client_config
    client = config.client
    claimed = CODES.redeem(code_digest, client, _COLUMNS)
    if claimed is None:  # redeemed meanwhile by a concurrent poll
        raise InvalidGrant(INVALID_CODE, event_error=INVALID_DEVICE_CODE)
    codes.check_pkce(client, SimpleNamespace(**claimed), exchange.params.get("code_verifier") or "")
    exchange.session_id = claimed["user_session_id"] or ""
    # A live session's user is enabled: a user's change drops the session's copy, and the session
    # of a disabled user ends on the way (sessions.get_valid_session).
    user_session = sessions.get_valid_session(realm, claimed["user_session_id"]) if claimed["user_session_id"] else None
    if user_session is None:
        raise InvalidGrant("Session not active", event_error="user_session_not_found")
    user = user_session.user
    exchange.user_id = user.pk
    client_session = sessions.client_session_of(user_session, client)
    if client_session is None:
        raise InvalidGrant("Auth error", event_error="invalid_code")
    scopes, openid = tokens.resolve_scopes(config, claimed["scope"])
    if consent.not_granted(user, client, consent.shown_scopes(config, claimed["scope"])):
        # The consent given on the device page was revoked meanwhile.
        raise InvalidScope("Client no longer has requested consent from user", event_error="not_allowed")
    return session_tokens(exchange, "OAUTH2_DEVICE_CODE_TO_TOKEN", user, scopes, openid, user_session,
                          client_session, nonce=claimed["nonce"])


def register_grant_type():
    register_grant(GRANT_TYPE, device_code_grant, "OAUTH2_DEVICE_CODE_TO_TOKEN", feature=FEATURE)
