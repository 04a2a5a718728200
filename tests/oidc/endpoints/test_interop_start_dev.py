"""A real relying party (Authlib's OAuth2 client) against ``manage.py start_dev`` as a developer
runs it (its own process, SQLite, local caches): a realm imported with ``manage.py import_realm``,
the code flow with PKCE through the login form, the ID token validated against the JWKS,
refresh, userinfo, introspection, a second client answered from the SSO cookie, RP-initiated
logout, after which the refresh token is refused with invalid_grant."""
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from authlib.common.security import generate_token
from authlib.integrations.base_client.errors import OAuthError
from authlib.integrations.requests_client import OAuth2Session
from joserfc import jwt
from joserfc.jwk import KeySet

from .test_interop_authlib import sign_in

SECRET, PASSWORD = "rp-secret-" + "s" * 24, "interop-password-2"
RP_REDIRECT, SPA_REDIRECT = "http://127.0.0.1/rp/cb", "http://127.0.0.1/spa/cb"
REALM = {
    "realm": "interop", "enabled": True,
    "clients": [
        {"clientId": "rp", "secret": SECRET, "standardFlowEnabled": True, "redirectUris": [RP_REDIRECT],
         "attributes": {"pkce.code.challenge.method": "S256", "post.logout.redirect.uris": "+"}},
        {"clientId": "spa", "publicClient": True, "standardFlowEnabled": True, "redirectUris": [SPA_REDIRECT],
         "attributes": {"pkce.code.challenge.method": "S256"}},
    ],
    "users": [{"username": "alice", "enabled": True, "email": "alice@example.org", "firstName": "Alice",
               "credentials": [{"type": "password", "value": PASSWORD}], "realmRoles": ["default-roles-interop"]}],
}


@pytest.fixture(scope="module")
def interop(start_dev):
    """The base URL of the run's start_dev server with the ``interop`` realm imported."""
    base, import_realm = start_dev
    import_realm(REALM)
    return base


def _jwks_claims(meta, token, **expected):
    claims = jwt.decode(token, KeySet.import_key_set(requests.get(meta["jwks_uri"], timeout=10).json())).claims
    jwt.JWTClaimsRegistry(iss={"essential": True, "value": meta["issuer"]}, exp={"essential": True},
                          **{k: {"essential": True, "value": v} for k, v in expected.items()}).validate(claims)
    return claims


def test_relying_party_against_start_dev(interop):
    meta = requests.get(f"{interop}/realms/interop/.well-known/openid-configuration", timeout=10).json()
    assert meta["issuer"] == f"{interop}/realms/interop"
    rp = OAuth2Session("rp", SECRET, scope="openid profile email", redirect_uri=RP_REDIRECT,
                       code_challenge_method="S256", token_endpoint_auth_method="client_secret_basic")
    verifier, nonce = generate_token(48), generate_token(16)
    url, state = rp.create_authorization_url(meta["authorization_endpoint"], code_verifier=verifier, nonce=nonce)
    browser = requests.Session()
    location = sign_in(browser, url, "alice", PASSWORD)
    query = parse_qs(urlsplit(location).query)
    assert location.startswith(RP_REDIRECT + "?") and query["state"] == [state] and query["iss"] == [meta["issuer"]]
    token = rp.fetch_token(meta["token_endpoint"], authorization_response=location, code_verifier=verifier)

    id_claims = _jwks_claims(meta, token["id_token"], aud="rp", nonce=nonce, acr="1")
    assert id_claims["preferred_username"] == "alice"
    assert rp.get(meta["userinfo_endpoint"]).json()["email"] == "alice@example.org"

    refreshed = rp.refresh_token(meta["token_endpoint"])
    assert refreshed["access_token"] != token["access_token"]
    introspected = rp.introspect_token(meta["introspection_endpoint"], token=refreshed["access_token"]).json()
    assert introspected["active"] is True and introspected["sub"] == id_claims["sub"]

    # A second client in the same browser: a code at once, no form; its ID token says so (acr 0).
    spa = OAuth2Session("spa", scope="openid", redirect_uri=SPA_REDIRECT, code_challenge_method="S256",
                        token_endpoint_auth_method="none")
    spa_verifier = generate_token(48)
    spa_url, _ = spa.create_authorization_url(meta["authorization_endpoint"], code_verifier=spa_verifier)
    direct = browser.get(spa_url, allow_redirects=False, timeout=10)
    assert direct.status_code == 302 and direct.headers["Location"].startswith(SPA_REDIRECT + "?code=")
    spa_token = spa.fetch_token(meta["token_endpoint"], authorization_response=direct.headers["Location"],
                                code_verifier=spa_verifier)
    assert _jwks_claims(meta, spa_token["id_token"], aud="spa", sid=id_claims["sid"])["acr"] == "0"

    # RP-initiated logout ends the SSO session: back to the RP, and its refresh token is dead.
    logout = browser.get(meta["end_session_endpoint"], params={
        "id_token_hint": refreshed["id_token"], "post_logout_redirect_uri": RP_REDIRECT, "state": "bye"},
        allow_redirects=False, timeout=10)
    assert logout.status_code == 302 and logout.headers["Location"] == RP_REDIRECT + "?state=bye"
    with pytest.raises(OAuthError) as refused:
        rp.refresh_token(meta["token_endpoint"])
    assert refused.value.error == "invalid_grant"
    assert rp.introspect_token(meta["introspection_endpoint"], token=refreshed["access_token"]).json() == {
        "active": False}
