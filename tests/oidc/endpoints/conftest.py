"""Fixtures for the token-side endpoint tests: a realm imported from a Keycloak representation
(so it has the built-in client scopes and mappers), clients of each kind, and a signed-in
user session made without a browser (the browser tests cover the login page)."""
import base64
import secrets
import uuid

import pytest
from django.test import Client as HttpClient
from jwcrypto import jwk

from oidc.codes import issue_code, s256_challenge
from realms.models import Client, User
from realms.representation import import_realm
from realms.sso import sessions

SECRET = "app-secret-" + "x" * 20
REDIRECT = "https://app.example/cb"
SPA_REDIRECT = "http://127.0.0.1/cb"


def basic(client_id, secret):
    return "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()


@pytest.fixture
def realm(db):
    name = "t" + uuid.uuid4().hex[:10]
    return import_realm({
        "realm": name,
        "enabled": True,
        "roles": {
            "realm": [{"name": "reader"}, {"name": "writer"}],
            "client": {"api": [{"name": "read"}, {"name": "admin"}]},
        },
        "clients": [
            {"clientId": "app", "secret": SECRET, "serviceAccountsEnabled": True,
             "directAccessGrantsEnabled": True, "redirectUris": [REDIRECT], "webOrigins": ["+"]},
            {"clientId": "spa", "publicClient": True, "redirectUris": [SPA_REDIRECT],
             "webOrigins": ["http://127.0.0.1:3000"], "attributes": {"pkce.code.challenge.method": "S256"}},
            {"clientId": "api", "bearerOnly": True, "secret": "api-secret-" + "y" * 20},
        ],
        "users": [
            {"username": "alice", "enabled": True, "email": "alice@example.org", "emailVerified": True,
             "firstName": "Alice", "lastName": "Liddell", "attributes": {"team": ["blue", "green"]},
             "realmRoles": ["reader", f"default-roles-{name}"], "clientRoles": {"api": ["read"]}},
        ],
    }).realm


@pytest.fixture
def http():
    return HttpClient()


@pytest.fixture
def alice(realm):
    return User.objects.get(realm=realm, username="alice")


def client_of(realm, client_id):
    return Client.objects.get(realm=realm, client_id=client_id)


def token_url(realm):
    return f"/realms/{realm.name}/protocol/openid-connect/token"


def url(realm, suffix):
    return f"/realms/{realm.name}/protocol/openid-connect/{suffix}"


def signed_in(realm, user, client, *, redirect_uri=REDIRECT, scope="openid"):
    """A user session with a client session, as the authorization endpoint leaves it."""
    user_session = sessions.create_user_session(realm, user, auth_methods=("pwd",))
    sessions.get_or_create_client_session(user_session, client, redirect_uri=redirect_uri, scope=scope)
    return user_session


def code_for(realm, user, client_id="app", *, redirect_uri=REDIRECT, scope="openid", verifier=None,
             method="S256", nonce="n-1", user_session=None):
    client = client_of(realm, client_id)
    user_session = user_session or signed_in(realm, user, client, redirect_uri=redirect_uri, scope=scope)
    challenge = ""
    if verifier is not None:
        challenge = s256_challenge(verifier) if method == "S256" else verifier
    code = issue_code(client=client, user_session=user_session, redirect_uri=redirect_uri, scope=scope,
                      nonce=nonce, code_challenge=challenge, code_challenge_method=method if verifier else "")
    return code, user_session


def new_verifier():
    return secrets.token_urlsafe(32)


def exchange(http, realm, code, *, client_id="app", secret=SECRET, redirect_uri=REDIRECT, verifier=None, **extra):
    headers = {k: extra.pop(k) for k in list(extra) if k.startswith("HTTP_")}
    data = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri, **extra}
    if verifier is not None:
        data["code_verifier"] = verifier
    if secret:
        headers["HTTP_AUTHORIZATION"] = basic(client_id, secret)
    else:
        data["client_id"] = client_id
    return http.post(token_url(realm), data, **headers)


def refresh(http, realm, refresh_token, *, client_id="app", secret=SECRET, **extra):
    data = {"grant_type": "refresh_token", "refresh_token": refresh_token, **extra}
    headers = {"HTTP_AUTHORIZATION": basic(client_id, secret)} if secret else {}
    if not secret:
        data["client_id"] = client_id
    return http.post(token_url(realm), data, **headers)


@pytest.fixture
def key_client(realm):
    """Client "app" authenticating with private_key_jwt; the test signs with the returned EC key."""
    key = jwk.JWK.generate(kty="EC", crv="P-256", kid="k1")
    app = client_of(realm, "app")
    app.client_authenticator_type = "client-jwt"
    app.attributes = {**app.attributes, "jwks.string": '{"keys": [%s]}' % key.export_public()}
    app.save()
    return key
