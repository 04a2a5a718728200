"""A real relying party (Authlib's OAuth2 client) against a live server: code flow with PKCE
through the login form, ID token validated against the JWKS, refresh, userinfo, introspection,
revocation, and client credentials."""
import html
import re
from urllib.parse import parse_qs, urljoin, urlsplit

import pytest
import requests
from authlib.common.security import generate_token
from authlib.integrations.requests_client import OAuth2Session
from joserfc import jwt
from joserfc.jwk import KeySet

from realms.models import User
from realms.users import storage

from .conftest import REDIRECT, SECRET

PASSWORD = "interop-password-1"


@pytest.fixture
def rp(live_server, realm):
    user = User.objects.get(realm=realm, username="alice")
    storage.set_password(user.realm, user, PASSWORD)
    base = f"{live_server.url}/realms/{realm.name}"
    meta = requests.get(f"{base}/.well-known/openid-configuration", timeout=10).json()
    return meta


def sign_in(session, url, username, password):
    """Submit the realm's login form like a browser without JavaScript; returns the redirect."""
    page = session.get(url, timeout=10)
    assert page.status_code == 200, page.text[:500]
    action = html.unescape(re.search(r'<form method="post" action="([^"]+)"', page.text).group(1))
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    resp = session.post(urljoin(page.url, action), data={"csrfmiddlewaretoken": token, "username": username,
                                                        "password": password},
                        headers={"Referer": page.url}, allow_redirects=False, timeout=10)
    assert resp.status_code in (302, 303), resp.text[:500]
    return resp.headers["Location"]


def test_code_flow_with_pkce_refresh_userinfo_introspection(rp):
    rp_session = OAuth2Session("app", SECRET, scope="openid profile email", redirect_uri=REDIRECT,
                               code_challenge_method="S256", token_endpoint_auth_method="client_secret_basic")
    verifier = generate_token(48)
    nonce = generate_token(16)
    url, state = rp_session.create_authorization_url(rp["authorization_endpoint"], code_verifier=verifier, nonce=nonce)
    browser = requests.Session()
    location = sign_in(browser, url, "alice", PASSWORD)
    assert location.startswith(REDIRECT)
    query = parse_qs(urlsplit(location).query)
    assert query["state"] == [state]
    token = rp_session.fetch_token(rp["token_endpoint"], authorization_response=location, code_verifier=verifier)

    jwks = KeySet.import_key_set(requests.get(rp["jwks_uri"], timeout=10).json())
    id_claims = jwt.decode(token["id_token"], jwks).claims
    jwt.JWTClaimsRegistry(iss={"essential": True, "value": rp["issuer"]}, aud={"essential": True, "value": "app"},
                          nonce={"essential": True, "value": nonce}, exp={"essential": True}).validate(id_claims)
    assert id_claims["preferred_username"] == "alice"

    info = rp_session.get(rp["userinfo_endpoint"]).json()
    assert info["sub"] == id_claims["sub"] and info["email"] == "alice@example.org"

    refreshed = rp_session.refresh_token(rp["token_endpoint"])
    assert refreshed["access_token"] != token["access_token"]

    introspection = rp_session.introspect_token(rp["introspection_endpoint"], token=refreshed["access_token"]).json()
    assert introspection["active"] is True and introspection["sub"] == id_claims["sub"]

    assert rp_session.revoke_token(rp["revocation_endpoint"], token=refreshed["refresh_token"],
                                   token_type_hint="refresh_token").status_code == 200
    assert rp_session.introspect_token(rp["introspection_endpoint"],
                                       token=refreshed["access_token"]).json() == {"active": False}

    # A second client in the same browser gets a code without the form (SSO cookie).
    spa = OAuth2Session("spa", scope="openid", redirect_uri="http://127.0.0.1/cb", code_challenge_method="S256",
                        token_endpoint_auth_method="none")
    spa_verifier = generate_token(48)
    spa_url, _ = spa.create_authorization_url(rp["authorization_endpoint"], code_verifier=spa_verifier)
    direct = browser.get(spa_url, allow_redirects=False, timeout=10)
    assert direct.status_code == 302 and "code=" in direct.headers["Location"]
    spa_token = spa.fetch_token(rp["token_endpoint"], authorization_response=direct.headers["Location"],
                                code_verifier=spa_verifier)
    assert spa_token["id_token"]


def test_client_credentials_with_authlib(rp):
    session = OAuth2Session("app", SECRET, token_endpoint_auth_method="client_secret_post")
    token = session.fetch_token(rp["token_endpoint"], grant_type="client_credentials")
    jwks = KeySet.import_key_set(requests.get(rp["jwks_uri"], timeout=10).json())
    claims = jwt.decode(token["access_token"], jwks).claims
    jwt.JWTClaimsRegistry(iss={"essential": True, "value": rp["issuer"]}, exp={"essential": True}).validate(claims)
    assert claims["azp"] == "app" and claims["iss"] == rp["issuer"]
