"""The JWT authorization grant (RFC 7523 §2.1) at the token endpoint: one test per check, each
failing if the check breaks, with Keycloak's descriptions and events."""
import time
import uuid

import pytest
from jwcrypto import jwk

from oidc import client_auth
from realms.models import Client, Event, IdentityProvider, User

from .conftest import (
    GRANT,
    IDP_ALIAS,
    IDP_ISSUER,
    SUBJECT,
    claims_for,
    grant,
    issuer_of,
    new_key,
    sign,
    token_url,
    unsigned,
)


def decoded(token):
    from oidc.jose import parse
    return parse(token)[1]


def refused(resp, description, error="invalid_grant"):
    assert resp.status_code == 400, resp.content
    assert resp.json() == {"error": error, "error_description": description}


def last_event(realm):
    return Event.objects.filter(realm=realm).order_by("-time", "-id").first()


def test_success_access_token_without_session_or_refresh_token(http, realm, idp_key):
    resp = grant(http, realm, sign(claims_for(realm), idp_key))
    assert resp.status_code == 200, resp.content
    body = resp.json()
    assert "refresh_token" not in body and body["refresh_expires_in"] == 0
    assert "session_state" not in body and "id_token" not in body
    claims = decoded(body["access_token"])
    alice = User.objects.get(realm=realm, username="alice")
    assert claims["sub"] == alice.pk and claims["azp"] == "agent" and "sid" not in claims
    assert claims["iss"] == issuer_of(realm) and claims["preferred_username"] == "alice"
    # The transient session stored nothing.
    from realms.models import UserSession
    assert not UserSession.objects.filter(realm=realm).exists()


def test_success_event_login_with_keycloak_details(http, realm, idp_key):
    assert grant(http, realm, sign(claims_for(realm), idp_key)).status_code == 200
    event = last_event(realm)
    alice = User.objects.get(realm=realm, username="alice")
    assert (event.type, event.client_id, event.user_id, event.session_id, event.error) == ("LOGIN", "agent", alice.pk, "", "")
    assert event.details["grant_type"] == GRANT and event.details["identity_provider"] == IDP_ALIAS
    assert event.details["identity_provider_issuer"] == IDP_ISSUER
    assert event.details["identity_provider_user_id"] == SUBJECT and event.details["username"] == "alice"


def test_openid_scope_gives_an_id_token_and_requested_scope_is_validated(http, realm, idp_key):
    resp = grant(http, realm, sign(claims_for(realm), idp_key), scope="openid")
    assert resp.status_code == 200 and "id_token" in resp.json()
    assert "openid" in resp.json()["scope"].split()
    resp = grant(http, realm, sign(claims_for(realm), idp_key), scope="no-such-scope")
    refused(resp, "Invalid scopes: no-such-scope", "invalid_scope")


def test_missing_assertion(http, realm):
    refused(grant(http, realm, None), "Missing parameter:assertion")
    event = last_event(realm)
    assert (event.type, event.error) == ("LOGIN_ERROR", "invalid_request")
    assert event.details["reason"] == "Missing parameter:assertion" and event.details["grant_type"] == GRANT


@pytest.mark.parametrize("assertion", ["fake-jwt", "a.b.c", ""])
def test_not_a_jwt(http, realm, assertion):
    refused(grant(http, realm, assertion), "The provided assertion is not a valid JWT")


def test_claim_of_the_wrong_type_is_not_a_valid_jwt(http, realm, idp_key):
    refused(grant(http, realm, sign(claims_for(realm, exp="tomorrow"), idp_key)), "The provided assertion is not a valid JWT")


def test_public_client_refused(http, realm, idp_key):
    refused(grant(http, realm, sign(claims_for(realm), idp_key), client_id="public-agent", secret=None),
            "Public client not allowed to use authorization grant")


def test_client_switch_off_refused(http, realm, idp_key):
    refused(grant(http, realm, sign(claims_for(realm), idp_key), client_id="switched-off"),
            "JWT Authorization Grant is not supported for the requested client")


def test_provider_not_allowed_for_the_client(http, realm, idp_key):
    refused(grant(http, realm, sign(claims_for(realm), idp_key), client_id="other-only"),
            "Identity Provider is not allowed for the client")


def test_missing_iss(http, realm, idp_key):
    refused(grant(http, realm, sign(claims_for(realm, iss=None), idp_key)), "Missing claim: iss")


def test_unknown_issuer(http, realm, idp_key):
    refused(grant(http, realm, sign(claims_for(realm, iss="https://evil.example"), idp_key)),
            "No Identity Provider for provided issuer")
    assert last_event(realm).details["identity_provider_issuer"] == "https://evil.example"


def test_disabled_provider_is_no_provider(http, realm, idp_key):
    IdentityProvider.objects.filter(realm=realm, alias=IDP_ALIAS).update(enabled=False)
    _drop_realm_cache()
    refused(grant(http, realm, sign(claims_for(realm), idp_key)), "No Identity Provider for provided issuer")


def test_provider_without_the_grant_switch(http, realm, idp_key):
    idp = IdentityProvider.objects.get(realm=realm, alias=IDP_ALIAS)
    idp.config = {**idp.config, "jwtAuthorizationGrantEnabled": "false"}
    idp.save()
    _drop_realm_cache()
    refused(grant(http, realm, sign(claims_for(realm), idp_key)),
            "Identity Provider is not configured for JWT Authorization Grant")


def test_missing_sub(http, realm, idp_key):
    refused(grant(http, realm, sign(claims_for(realm, sub=None), idp_key)), "Missing claim: sub")


def test_unlinked_subject_is_unknown_user(http, realm, idp_key):
    refused(grant(http, realm, sign(claims_for(realm, sub="nobody"), idp_key)), "User not found")
    details = last_event(realm).details
    assert details["identity_provider"] == IDP_ALIAS and details["identity_provider_user_id"] == "nobody"


def test_a_local_username_is_not_a_subject(http, realm, idp_key):
    refused(grant(http, realm, sign(claims_for(realm, sub="dave"), idp_key)), "User not found")


def test_disabled_user(http, realm, idp_key):
    refused(grant(http, realm, sign(claims_for(realm, sub="partner-user-2"), idp_key)), "User is not enabled")


def test_user_with_required_action(http, realm, idp_key):
    refused(grant(http, realm, sign(claims_for(realm, sub="partner-user-3"), idp_key)), "Account is not fully set up")


# Audience --------------------------------------------------------------------------------------

def test_audience_token_endpoint_accepted(http, realm, idp_key):
    aud = "http://testserver" + token_url(realm)
    assert grant(http, realm, sign(claims_for(realm, aud=[aud]), idp_key)).status_code == 200


@pytest.mark.parametrize("aud", [None, "https://elsewhere.example", "introspect"])
def test_wrong_or_missing_audience(http, realm, idp_key, aud):
    if aud == "introspect":
        aud = issuer_of(realm) + "/protocol/openid-connect/token/introspect"
    refused(grant(http, realm, sign(claims_for(realm, aud=aud), idp_key)), "Invalid token audience")


def test_several_audiences_refused_even_when_valid(http, realm, idp_key):
    aud = [issuer_of(realm), "http://testserver" + token_url(realm)]
    refused(grant(http, realm, sign(claims_for(realm, aud=aud), idp_key)), "Multiple audiences not allowed")


# Time ------------------------------------------------------------------------------------------

def test_exp_required(http, realm, idp_key):
    refused(grant(http, realm, sign(claims_for(realm, exp=None), idp_key)), "Token exp claim is required")


def test_expired(http, realm, idp_key):
    refused(grant(http, realm, sign(claims_for(realm, exp=int(time.time()) - 1), idp_key)), "Token is not active")


def test_nbf_in_the_future(http, realm, idp_key):
    refused(grant(http, realm, sign(claims_for(realm, nbf=int(time.time()) + 60), idp_key)), "Token is not active")


def test_iat_in_the_future(http, realm, idp_key):
    refused(grant(http, realm, sign(claims_for(realm, iat=int(time.time()) + 60), idp_key)),
            "Token was issued in the future")


def test_clock_skew_tolerates_a_slightly_early_iat_and_nbf(http, make_realm, idp_key):
    realm = make_realm(idp_config={"allowedClockSkew": "30"})
    now = int(time.time())
    assert grant(http, realm, sign(claims_for(realm, iat=now + 20, nbf=now + 20), idp_key)).status_code == 200
    refused(grant(http, realm, sign(claims_for(realm, iat=now + 45), idp_key)), "Token was issued in the future")


def test_lifetime_without_iat_limited_to_the_maximum(http, realm, idp_key):
    now = int(time.time())
    refused(grant(http, realm, sign(claims_for(realm, iat=None, exp=now + 305), idp_key)),
            "Token expiration is too far in the future and iat claim not present in token")
    assert grant(http, realm, sign(claims_for(realm, iat=None, exp=now + 290), idp_key)).status_code == 200


def test_issued_too_long_ago(http, make_realm, idp_key):
    realm = make_realm(idp_config={"jwtAuthorizationGrantMaxAllowedAssertionExpiration": "10"})
    now = int(time.time())
    refused(grant(http, realm, sign(claims_for(realm, iat=now - 11, exp=now + 60), idp_key)),
            "Token was issued too far in the past to be used now")
    assert grant(http, realm, sign(claims_for(realm, iat=now - 5, exp=now + 60), idp_key)).status_code == 200


def test_limit_access_token_expiration(http, make_realm, idp_key):
    realm = make_realm(idp_config={"jwtAuthorizationGrantLimitAccessTokenExp": "true"})
    exp = int(time.time()) + 30
    resp = grant(http, realm, sign(claims_for(realm, exp=exp), idp_key))
    assert resp.status_code == 200 and resp.json()["expires_in"] <= 30
    assert decoded(resp.json()["access_token"])["exp"] == exp


def test_access_token_not_limited_by_default(http, realm, idp_key):
    resp = grant(http, realm, sign(claims_for(realm, exp=int(time.time()) + 30), idp_key))
    assert resp.json()["expires_in"] > 30


# jti -------------------------------------------------------------------------------------------

def test_jti_required(http, realm, idp_key):
    refused(grant(http, realm, sign(claims_for(realm, jti=None), idp_key)), "Token jti claim is required")


def test_replay_refused(http, realm, idp_key):
    assertion = sign(claims_for(realm), idp_key)
    assert grant(http, realm, assertion).status_code == 200
    refused(grant(http, realm, assertion), "Token reuse detected")


def test_same_jti_in_another_assertion_refused(http, realm, idp_key):
    jti = uuid.uuid4().hex
    assert grant(http, realm, sign(claims_for(realm, jti=jti), idp_key)).status_code == 200
    refused(grant(http, realm, sign(claims_for(realm, jti=jti, scope="x"), idp_key)), "Token reuse detected")


def test_forged_assertion_does_not_spend_the_jti(http, realm, idp_key):
    jti = uuid.uuid4().hex
    refused(grant(http, realm, sign(claims_for(realm, jti=jti), new_key(kid=idp_key.get("kid")))), "Invalid signature")
    assert grant(http, realm, sign(claims_for(realm, jti=jti), idp_key)).status_code == 200


def test_reuse_allowed_by_the_provider(http, make_realm, idp_key):
    realm = make_realm(idp_config={"jwtAuthorizationGrantAssertionReuseAllowed": "true"})
    assertion = sign(claims_for(realm, jti=None), idp_key)
    assert grant(http, realm, assertion).status_code == 200
    assert grant(http, realm, assertion).status_code == 200


# Signature -------------------------------------------------------------------------------------

def test_alg_none_refused(http, realm):
    refused(grant(http, realm, unsigned(claims_for(realm), {"alg": "none"})), "Invalid signature algorithm")


def test_hmac_keyed_with_the_public_key_refused(http, realm, idp_key):
    import base64
    import hashlib
    import hmac
    public = idp_key.export_to_pem()
    head = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').rstrip(b"=")
    body = base64.urlsafe_b64encode(__import__("json").dumps(claims_for(realm)).encode()).rstrip(b"=")
    mac = base64.urlsafe_b64encode(hmac.new(public, head + b"." + body, hashlib.sha256).digest()).rstrip(b"=")
    refused(grant(http, realm, (head + b"." + body + b"." + mac).decode()), "Invalid signature algorithm")


def test_required_signature_algorithm(http, make_realm, idp_key):
    realm = make_realm(idp_config={"jwtAuthorizationGrantAssertionSignatureAlg": "ES256"})
    assert grant(http, realm, sign(claims_for(realm), idp_key)).status_code == 200
    realm = make_realm(idp_config={"jwtAuthorizationGrantAssertionSignatureAlg": "RS256"})
    refused(grant(http, realm, sign(claims_for(realm), idp_key)), "Invalid signature algorithm")


def test_bad_signature(http, realm, idp_key):
    impostor = new_key(kid=idp_key.get("kid"))
    refused(grant(http, realm, sign(claims_for(realm), impostor)), "Invalid signature")


def test_signature_with_a_key_of_another_type_refused(http, realm, idp_key):
    rsa = new_key(kid=idp_key.get("kid"), kty="RSA")
    refused(grant(http, realm, sign(claims_for(realm), rsa, alg="RS256")), "Invalid signature")


def test_configured_public_key_pem(http, make_realm, jwks_server):
    key = new_key(kty="RSA")
    pem = key.export_to_pem().decode()
    realm = make_realm(idp_config={"useJwksUrl": "false", "jwksUrl": "", "publicKeySignatureVerifier": pem})
    assert grant(http, realm, sign(claims_for(realm), key, kid=False)).status_code == 200
    refused(grant(http, realm, sign(claims_for(realm), new_key(kty="RSA"), kid=False)), "Invalid signature")
    assert jwks_server.hits == 0


def test_configured_public_key_pinned_to_a_kid(http, make_realm):
    key = new_key(kid="pinned")
    realm = make_realm(idp_config={"useJwksUrl": "false", "jwksUrl": "", "publicKeySignatureVerifierKeyId": "pinned",
                                   "publicKeySignatureVerifier": key.export_to_pem().decode()})
    assert grant(http, realm, sign(claims_for(realm), key)).status_code == 200
    refused(grant(http, realm, sign(claims_for(realm), key, kid="another")), "Invalid signature")


def test_configured_jwk(http, make_realm):
    key = new_key()
    realm = make_realm(idp_config={"useJwksUrl": "false", "jwksUrl": "",
                                   "publicKeySignatureVerifier": key.export_public()})
    assert grant(http, realm, sign(claims_for(realm), key)).status_code == 200


def test_client_keys_are_no_trust_anchor(http, realm):
    """Keycloak 26.6 trusts identity providers only: an assertion the client signs itself, with
    its own key (private_key_jwt), names the client as issuer and no provider has that issuer."""
    key = jwk.JWK.generate(kty="EC", crv="P-256", kid="ck")
    agent = Client.objects.get(realm=realm, client_id="agent")
    agent.attributes = {**agent.attributes, "jwks.string": '{"keys": [%s]}' % key.export_public()}
    agent.save()
    _drop_realm_cache()
    refused(grant(http, realm, sign(claims_for(realm, iss="agent"), key)), "No Identity Provider for provided issuer")


# Client authentication together with the grant --------------------------------------------------

def test_client_authenticates_with_its_own_assertion(http, realm, idp_key):
    client_key = jwk.JWK.generate(kty="EC", crv="P-256", kid="client-key")
    agent = Client.objects.get(realm=realm, client_id="key-agent")
    agent.attributes = {**agent.attributes, "jwks.string": '{"keys": [%s]}' % client_key.export_public()}
    agent.save()
    _drop_realm_cache()
    now = int(time.time())
    client_assertion = sign({"iss": "key-agent", "sub": "key-agent", "aud": issuer_of(realm), "exp": now + 30,
                             "iat": now, "jti": uuid.uuid4().hex}, client_key)
    data = {"grant_type": GRANT, "assertion": sign(claims_for(realm), idp_key),
            "client_assertion_type": client_auth.ASSERTION_TYPE, "client_assertion": client_assertion}
    resp = http.post(token_url(realm), data)
    assert resp.status_code == 200, resp.content
    assert decoded(resp.json()["access_token"])["azp"] == "key-agent"
    assert last_event(realm).details["client_auth_method"] == "private_key_jwt"
    # The client assertion is single use too: the same pair again fails at client authentication.
    data["assertion"] = sign(claims_for(realm), idp_key)
    resp = http.post(token_url(realm), data)
    assert resp.status_code == 401 and resp.json()["error"] == "invalid_client"


def test_wrong_client_secret_is_invalid_client_not_invalid_grant(http, realm, idp_key):
    resp = grant(http, realm, sign(claims_for(realm), idp_key), secret="wrong")
    assert resp.status_code == 401 and resp.json()["error"] == "invalid_client"


# The server feature ---------------------------------------------------------------------------

def test_feature_off_unsupported_and_not_in_discovery(http, realm, idp_key, settings):
    settings.IDP_FEATURES_DISABLED = "jwt-authorization-grant"
    resp = grant(http, realm, sign(claims_for(realm), idp_key))
    assert resp.status_code == 400 and resp.json()["error"] == "unsupported_grant_type"
    doc = http.get(f"/realms/{realm.name}/.well-known/openid-configuration").json()
    assert GRANT not in doc["grant_types_supported"]


def test_feature_on_listed_in_discovery(http, realm):
    doc = http.get(f"/realms/{realm.name}/.well-known/openid-configuration").json()
    assert GRANT in doc["grant_types_supported"]


def _drop_realm_cache():
    from realms.data import realm_cache
    realm_cache.clear()


def test_keycloaks_dedicated_provider_type(http, realm, idp_key, jwks_server):
    """A provider of Keycloak's type jwt-authorization-grant trusts assertions without a switch, and
    its clock skew is jwtAuthorizationGrantAllowedClockSkew (no import path stores this type yet:
    the row is written directly)."""
    from realms.models import FederatedIdentity
    idp = IdentityProvider.objects.create(
        realm=realm, alias="grant-only", provider_id="jwt-authorization-grant",
        config={"issuer": "https://grant-only.example", "useJwksUrl": "true", "jwksUrl": jwks_server.url,
                "jwtAuthorizationGrantAllowedClockSkew": "30"})
    alice = User.objects.get(realm=realm, username="alice")
    FederatedIdentity.objects.create(realm=realm, user=alice, identity_provider=idp, subject="g-1")
    agent = Client.objects.get(realm=realm, client_id="agent")
    agent.attributes = {**agent.attributes, "oauth2.jwt.authorization.grant.idp": "grant-only"}
    agent.save()
    _drop_realm_cache()
    now = int(time.time())
    claims = claims_for(realm, iss="https://grant-only.example", sub="g-1", iat=now + 20)
    resp = grant(http, realm, sign(claims, idp_key))
    assert resp.status_code == 200, resp.content
    assert decoded(resp.json()["access_token"])["sub"] == alice.pk
    claims = claims_for(realm, iss="https://grant-only.example", sub="g-1", iat=now + 45)
    refused(grant(http, realm, sign(claims, idp_key)), "Token was issued in the future")


def test_clock_skew_tolerates_a_just_expired_assertion(http, make_realm, idp_key):
    realm = make_realm(idp_config={"allowedClockSkew": "30"})
    now = int(time.time())
    assert grant(http, realm, sign(claims_for(realm, iat=None, exp=now - 5), idp_key)).status_code == 200
    refused(grant(http, realm, sign(claims_for(realm, iat=None, exp=now - 40), idp_key)), "Token is not active")


def test_provider_switched_on_wins_over_another_with_the_same_issuer(http, realm, idp_key, jwks_server):
    """Two providers with one issuer: the one that takes part in the grant answers."""
    IdentityProvider.objects.create(realm=realm, alias="a-first", provider_id="oidc",
                                    config={"issuer": IDP_ISSUER, "jwksUrl": jwks_server.url})
    agent = Client.objects.get(realm=realm, client_id="agent")
    agent.attributes = {**agent.attributes, "oauth2.jwt.authorization.grant.idp": f"a-first##{IDP_ALIAS}"}
    agent.save()
    _drop_realm_cache()
    assert grant(http, realm, sign(claims_for(realm), idp_key)).status_code == 200
    assert last_event(realm).details["identity_provider"] == IDP_ALIAS
