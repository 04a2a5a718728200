"""The endpoints beside the token endpoint: discovery, userinfo, introspection, revocation.

Each takes parsed input and returns the JSON body, or raises an OAuthError; the views only parse
and render.
"""
import hashlib
import time
from datetime import timedelta

from django.core.cache import cache
from django.utils import timezone

from realms import features
from realms.audit.events import emit
from realms.data.keys import realm_keys
from realms.models import RealmKey, User
from realms.signin import loa
from realms.sso import sessions

from . import binding, client_policies, dpop, jose, mtls, request_object, tokens
from .authorize import RESPONSE_MODES, RESPONSE_TYPES
from .client_auth import authenticate
from .errors import InvalidRequest, InvalidToken, OAuthError, UnauthorizedClient
from .grants import supported_grant_types
from .models import RevokedToken
from .realm_cache import scope_names

AUTH_METHODS = ["client_secret_basic", "client_secret_post", "client_secret_jwt", "private_key_jwt"]
MTLS_AUTH_METHODS = ["tls_client_auth", "self_signed_tls_client_auth"]  # once a proxy passes certificates
# The endpoints a client authenticates at or presents a bound token to (Keycloak's list).
MTLS_ENDPOINTS = ("token_endpoint", "revocation_endpoint", "introspection_endpoint", "device_authorization_endpoint",
                  "registration_endpoint", "userinfo_endpoint", "pushed_authorization_request_endpoint",
                  "backchannel_authentication_endpoint")
SIGNING_ALGS = [alg for alg, _ in RealmKey.ALGORITHMS]  # a realm signs with any of them (its fallback key)


def endpoint(issuer, suffix):
    return f"{issuer}/protocol/openid-connect/{suffix}"


def realm_info(realm, issuer):
    """Keycloak's PublishedRealmRepresentation: the active RS256 key as base64 DER
    (SubjectPublicKeyInfo, PEM without its armour), the token and account service URLs and the
    realm's not-before."""
    signer = realm_keys(realm).signer("RS256")
    public_key = None
    if signer is not None:
        pem = signer[1].export_to_pem().decode()
        public_key = "".join(line for line in pem.splitlines() if not line.startswith("-----"))
    return {
        "realm": realm.name,
        "public_key": public_key,
        "token-service": f"{issuer}/protocol/openid-connect",
        "account-service": f"{issuer}/account",
        "tokens-not-before": realm.not_before,
    }

def discovery_document(realm, issuer):
    """The OpenID Provider Metadata: exactly what this realm answers now (a grant or endpoint
    behind a server feature that is off is not listed)."""
    scopes = list(scope_names(realm))
    auth_algs = sorted(jose.ASYMMETRIC | jose.SYMMETRIC)
    auth_methods = AUTH_METHODS + (MTLS_AUTH_METHODS if mtls.enabled() else [])
    document = {
        "issuer": issuer,
        "authorization_endpoint": endpoint(issuer, "auth"),
        "token_endpoint": endpoint(issuer, "token"),
        "introspection_endpoint": endpoint(issuer, "token/introspect"),
        "userinfo_endpoint": endpoint(issuer, "userinfo"),
        "end_session_endpoint": endpoint(issuer, "logout"),
        "revocation_endpoint": endpoint(issuer, "revoke"),
        "jwks_uri": endpoint(issuer, "certs"),
        "check_session_iframe": endpoint(issuer, "login-status-iframe.html"),
        "frontchannel_logout_supported": True,
        "frontchannel_logout_session_supported": True,
        "backchannel_logout_supported": True,
        "backchannel_logout_session_supported": True,
        # implicit is a response type of the authorization endpoint, the rest grants of the token endpoint.
        "grant_types_supported": sorted({"implicit", *supported_grant_types()}),
        "response_types_supported": list(RESPONSE_TYPES.values()),
        "response_modes_supported": list(RESPONSE_MODES),
        "authorization_response_iss_parameter_supported": True,  # RFC 9207: every response carries iss
        "subject_types_supported": ["public", "pairwise"],  # pairwise: oidc-sha256-pairwise-sub-mapper
        "id_token_signing_alg_values_supported": list(tokens.TOKEN_ALGS),
        "id_token_encryption_alg_values_supported": list(jose.JWE_ALGS),
        "id_token_encryption_enc_values_supported": list(jose.JWE_ENCS),
        "userinfo_signing_alg_values_supported": [*tokens.TOKEN_ALGS, "none"],
        "userinfo_encryption_alg_values_supported": list(jose.JWE_ALGS),
        "userinfo_encryption_enc_values_supported": list(jose.JWE_ENCS),
        "token_endpoint_auth_methods_supported": auth_methods,
        "token_endpoint_auth_signing_alg_values_supported": auth_algs,
        "introspection_endpoint_auth_methods_supported": auth_methods,
        "introspection_endpoint_auth_signing_alg_values_supported": auth_algs,
        "revocation_endpoint_auth_methods_supported": auth_methods,
        "revocation_endpoint_auth_signing_alg_values_supported": auth_algs,
        "authorization_signing_alg_values_supported": SIGNING_ALGS,
        "code_challenge_methods_supported": ["plain", "S256"],
        "scopes_supported": ["openid", *[s for s in scopes if s != "openid"]],
        "claims_supported": ["aud", "sub", "iss", "auth_time", "name", "given_name", "family_name",
                             "preferred_username", "email", "email_verified", "acr", "azp", "nonce", "sid",
                             "at_hash", "c_hash"],
        # Keycloak's: the levels of the built-in flows, then the names of the realm's ACR-to-LoA mapping.
        "acr_values_supported": ["0", "1", *[name for name in loa.acr_loa_map(realm) if name not in ("0", "1")]],
        # Honoured as Keycloak does: an essential acr, and standard claims through the client's
        # oidc-claims-param-token-mapper / oidc-claims-param-value-idtoken-mapper.
        "claims_parameter_supported": True,
        # RFC 9101 and RFC 9126 (oidc.request_object, oidc.par): objects by value, by a registered
        # reference or pushed; which are required is per client.
        "request_parameter_supported": True,
        "request_uri_parameter_supported": True,
        "require_request_uri_registration": True,
        "request_object_signing_alg_values_supported": request_object.SIGNING_ALGS,
        **_request_object_encryption(realm),
        "pushed_authorization_request_endpoint": endpoint(issuer, "ext/par/request"),
        "require_pushed_authorization_requests": False,
        "tls_client_certificate_bound_access_tokens": mtls.enabled(),
        "dpop_signing_alg_values_supported": dpop.ALGORITHMS,
        **_optional_endpoints(issuer),
    }
    if mtls.enabled():  # RFC 8705 §5: the same URLs (the proxy in front asks for certificates)
        document["mtls_endpoint_aliases"] = {name: document[name] for name in MTLS_ENDPOINTS if name in document}
    return document


def _request_object_encryption(realm):
    """What a request object may be encrypted with: the algorithms of the realm's encryption keys
    (none, nothing listed)."""
    algs = sorted({alg for alg, _ in realm_keys(realm).decrypters.values()})
    if not algs:
        return {}
    return {"request_object_encryption_alg_values_supported": algs,
            "request_object_encryption_enc_values_supported": list(jose.JWE_ENCS)}


def _optional_endpoints(issuer):
    out = {}
    if features.enabled("device-flow"):
        out["device_authorization_endpoint"] = endpoint(issuer, "auth/device")
    if features.enabled("ciba"):
        out.update({
            "backchannel_authentication_endpoint": endpoint(issuer, "ext/ciba/auth"),
            "backchannel_token_delivery_modes_supported": ["poll", "ping"],
            # A signed request is verified with the client's keys: any asymmetric algorithm (oidc.ciba_signed).
            "backchannel_authentication_request_signing_alg_values_supported": sorted(jose.ASYMMETRIC),
            "backchannel_user_code_parameter_supported": False,
        })
    if features.enabled("client-registration"):
        out["registration_endpoint"] = f"{issuer}/clients-registrations/openid-connect"
    if features.enabled("client-id-metadata-document"):
        out["client_id_metadata_document_supported"] = True  # draft-ietf-oauth-client-id-metadata-document
    return out


# Revoked access tokens: their jti is remembered until they would have expired anyway.

# The marks are in the shared cache, each also a RevokedToken row; this key says the cache holds
# them all. Read in the same round trip as a mark: when it is missing (the cache restarted empty,
# or evicted it), the marks are put back from the database first.
_MARKS_HELD = "oidc:revoked-marks-held"
_MARK_PREFIX = "oidc:revoked-at:"


def _digest(jti):
    return hashlib.sha256(str(jti).encode()).hexdigest()


def _revoked_key(jti):
    return _MARK_PREFIX + _digest(jti)


def _with_marks(keys):
    """``cache.get_many(keys)`` where the revocation marks among ``keys`` are sure to be there."""
    found = cache.get_many([*keys, _MARKS_HELD])
    if found.pop(_MARKS_HELD, None) is None:
        now = timezone.now()
        rows = list(RevokedToken.objects.filter(expires_at__gt=now).values_list("digest", "expires_at"))
        if rows:  # one lifetime for all: a mark outliving its token changes nothing
            longest = max(int((expires - now).total_seconds()) for _, expires in rows) + 1
            cache.set_many({_MARK_PREFIX + digest: 1 for digest, _ in rows}, timeout=longest)
        cache.set(_MARKS_HELD, 1, timeout=None)
        revoked = {_MARK_PREFIX + digest for digest, _ in rows}
        found.update({key: 1 for key in keys if key in revoked})
    return found


def is_revoked(claims):
    if not claims.get("jti"):
        return False
    key = _revoked_key(claims["jti"])
    return key in _with_marks([key])


def live_subject(realm_config, claims, *, check_revoked=False, fresh_user=False, has_client_session=None):
    """(user, user session or None, client config) when the token is still backed by an enabled
    user, a live session (if it has one) and an enabled client; else None. ``check_revoked``: a
    revoked token is None too (its mark is read with the session, one round trip);
    ``fresh_user``: the user row is read now, not the session's cached copy, in the query that
    checks the client session (the Admin API: disabling an admin takes effect at once);
    ``has_client_session(user_session, client)``: how the token client's session is checked, for
    a caller that reads more in the same query (token exchange)."""
    config = realm_config.client(claims.get("azp", ""))
    if config is None or not config.client.enabled:
        return None
    sid = claims.get("sid")
    revoked_key = _revoked_key(claims["jti"]) if check_revoked and claims.get("jti") else None
    session_key = sessions.cache_key(sid) if sid else None
    # The client session's copy in the same round trip, unless the caller reads it otherwise.
    client_key = (sessions.client_cache_key(sid, config.client.pk)
                  if session_key and not fresh_user and has_client_session is None else None)
    keys = [key for key in (revoked_key, session_key, client_key) if key]
    found = (_with_marks(keys) if revoked_key else cache.get_many(keys)) if keys else {}
    if revoked_key in found:
        return None
    if sid:
        user_session = sessions.get_valid_session(realm_config.realm, sid, found.get(session_key))
        if user_session is None or config.subject(user_session.user_id) != claims.get("sub"):
            return None
        if fresh_user:
            user = sessions.user_with_client_session(user_session, config.client)
        elif not (has_client_session(user_session, config.client) if has_client_session
                  else sessions.copied_client_session(user_session, config.client, found.get(client_key)) is not None):
            return None
        else:
            user = user_session.user
    else:
        user_session = None
        user = _sessionless_user(realm_config, config, claims.get("sub"))
    if user is None or not user.enabled:
        return None
    user.realm = realm_config.realm
    return user, user_session, config


def _sessionless_user(realm_config, config, sub):
    """The user a token without a session names: a pairwise ``sub`` cannot be reversed, and such
    tokens are the client's service account's."""
    if config.pairwise is None:
        return User.objects.filter(pk=sub, realm=realm_config.realm).first()
    found = config.service_account()
    return found[0] if found and config.subject(found[0].pk) == sub else None


def _bearer(request, params):
    header = request.META.get("HTTP_AUTHORIZATION", "")
    if header[:7].lower() == "bearer ":
        return header[7:].strip()
    if header[:5].lower() == "dpop ":  # RFC 9449 §7.1; the binding check asks for the proof
        return header[5:].strip()
    return params.get("access_token", "") if request.method == "POST" else ""


def userinfo(request, realm_config, issuer, params):
    """(claims, client config, the signed or encrypted response or None: tokens.userinfo_jwt)
    for the bearer access token; InvalidToken (401) otherwise."""
    token = _bearer(request, params)
    if not token:
        raise InvalidToken("Missing bearer token", event_error="user_not_found")
    realm = realm_config.realm
    try:
        claims = tokens.decode(realm, token, issuer)
    except tokens.TokenError:
        raise InvalidToken("Token verification failed") from None
    if claims.get("typ") != tokens.TYP_BEARER or is_revoked(claims):
        raise InvalidToken("Token verification failed")
    binding.check_resource_request(request, token, claims, endpoint(issuer, "userinfo"))
    live = live_subject(realm_config, claims)
    if live is None:
        emit(realm, "USER_INFO_REQUEST_ERROR", client_id=claims.get("azp", ""), user_id=claims.get("sub", ""),
             session_id=claims.get("sid", ""), error="user_session_not_found")
        raise InvalidToken("Session not active or user disabled")
    user, user_session, config = live
    client_policies.enforce(client_policies.USERINFO_REQUEST, realm_config, config, request=request, claims=claims)
    scopes, openid = tokens.resolve_scopes(config, claims.get("scope", ""))
    ctx = tokens.TokenContext(
        realm=realm, client_config=config, user=user, issuer=issuer, scopes=scopes, openid=openid,
        user_session=user_session, roles=tokens.restricted_roles(config, realm_config.user_roles(user), scopes),
    )
    emit(realm, "USER_INFO_REQUEST", client_id=config.client_id, user_id=user.pk, session_id=claims.get("sid", ""))
    claims = tokens.userinfo_claims(ctx)
    return claims, config, tokens.userinfo_jwt(ctx, claims)


def introspect(request, realm_config, issuer, params, ip_address=""):
    """(RFC 7662 body, authenticated client config). Only authenticated clients may ask."""
    realm = realm_config.realm
    try:
        config, _ = authenticate(request, realm_config, params,
                                 audiences=(issuer, endpoint(issuer, "token"), endpoint(issuer, "token/introspect")),
                                 allow_bearer_only=True)
    except OAuthError as exc:
        emit(realm, "INTROSPECT_TOKEN_ERROR", client_id=params.get("client_id", ""), ip_address=ip_address,
             error=exc.event_error)
        raise
    if config.client.public_client:
        # A public client proves nothing about itself: it would learn any token's claims (Keycloak
        # answers 403 "Client not allowed." too).
        emit(realm, "INTROSPECT_TOKEN_ERROR", client_id=config.client_id, ip_address=ip_address,
             error="invalid_request")
        raise InvalidRequest("Client not allowed.", status=403)
    client_policies.enforce(client_policies.TOKEN_INTROSPECT, realm_config, config, request=request, params=params)
    token = params.get("token", "")
    if not token:
        raise InvalidRequest("Token not provided")
    inactive = {"active": False}
    try:
        claims = tokens.decode(realm, token, issuer)
    except tokens.TokenError:
        return inactive, config
    if claims.get("typ") not in (tokens.TYP_BEARER, tokens.TYP_REFRESH, tokens.TYP_OFFLINE, tokens.TYP_ID):
        return inactive, config
    if live_subject(realm_config, claims, check_revoked=True) is None:
        return inactive, config
    body = dict(claims)
    body["active"] = True
    body["client_id"] = claims.get("azp")
    # RFC 9449 §6.2 and Keycloak: a DPoP-bound token introspects as token_type DPoP (cnf is in the claims).
    body["token_type"] = dpop.TOKEN_TYPE if (claims.get("cnf") or {}).get("jkt") else claims.get("typ")
    if "preferred_username" in claims:
        body["username"] = claims["preferred_username"]
    emit(realm, "INTROSPECT_TOKEN", client_id=config.client_id, user_id=claims.get("sub", ""),
         session_id=claims.get("sid", ""), ip_address=ip_address)
    return body, config


def revoke(request, realm_config, issuer, params, ip_address=""):
    """RFC 7009. Returns the authenticated client config; unknown or invalid tokens are not an
    error (200), a token of another client is."""
    realm = realm_config.realm
    config, _ = authenticate(request, realm_config, params,
                             audiences=(issuer, endpoint(issuer, "token"), endpoint(issuer, "revoke")))
    client_policies.enforce(client_policies.TOKEN_REVOKE, realm_config, config, request=request, params=params)
    token = params.get("token", "")
    if not token:
        raise InvalidRequest("Token not provided")
    try:
        claims = tokens.decode(realm, token, issuer)
    except tokens.TokenError:
        return config
    if claims.get("azp") != config.client_id:
        emit(realm, "REVOKE_GRANT_ERROR", client_id=config.client_id, ip_address=ip_address, error="invalid_client")
        raise UnauthorizedClient("Unmatching clients", status=400)
    typ = claims.get("typ")
    if typ in (tokens.TYP_REFRESH, tokens.TYP_OFFLINE):
        # Revoking a refresh (or offline) token ends this client's share of the session: every
        # token issued from it stops refreshing and stops introspecting as active.
        sid = claims.get("sid")
        user_session = sessions.get_valid_session(realm, sid)
        if user_session is None:
            sessions.end_client_session(sid, config.client.pk)
        else:
            sessions.end_client_sessions([user_session], config.client, reason="revoked")
    elif typ == tokens.TYP_BEARER and claims.get("jti"):
        lifetime = max(int(claims.get("exp", 0)) - int(time.time()), 1)
        # One statement: a token revoked twice keeps its first row, whose expiry is its own.
        RevokedToken.objects.bulk_create(
            [RevokedToken(digest=_digest(claims["jti"]), expires_at=timezone.now() + timedelta(seconds=lifetime))],
            ignore_conflicts=True)
        cache.set(_revoked_key(claims["jti"]), 1, timeout=lifetime)
    emit(realm, "REVOKE_GRANT", client_id=config.client_id, user_id=claims.get("sub", ""),
         session_id=claims.get("sid", ""), ip_address=ip_address)
    return config
