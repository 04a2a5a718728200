"""Fixtures for pushed authorization requests and request objects: realm ``acme`` with a
confidential client ``web-app`` (secret), a user, and helpers that push, sign in through the
login form and sign request objects with the client's key."""
import time
import uuid

import pytest
from jwcrypto import jwk

from oidc import jose
from oidc.codes import s256_challenge
from realms.users.accounts import create_user
from tests.oidc.browser.conftest import PASSWORD, make_client
from tests.realms.conftest import realm  # noqa: F401 (fixture: realm acme with events saved)
from tests.realms.test_otp import action_of
from tests.realms.test_signin import redirect_query

REDIRECT = "https://app.example/cb"
ISSUER = "http://testserver/realms/acme"
AUTH = "/realms/acme/protocol/openid-connect/auth"
TOKEN = "/realms/acme/protocol/openid-connect/token"
PAR = "/realms/acme/protocol/openid-connect/ext/par/request"
SECRET = "secret-of-web-app"
VERIFIER = "v" * 43
PARAMS = {"response_type": "code", "redirect_uri": REDIRECT, "scope": "openid", "state": "st",
          "code_challenge": s256_challenge(VERIFIER), "code_challenge_method": "S256"}


@pytest.fixture(autouse=True)
def _fresh_cache(fresh_caches):
    pass


@pytest.fixture
def web_app(realm):
    return make_client(realm, "web-app", redirect_uris=[REDIRECT])


@pytest.fixture
def bob(realm):
    return create_user(realm, "bob", password=PASSWORD)


@pytest.fixture
def key(web_app):
    """An EC key of web-app's (``jwks.string``): request objects signed with it verify."""
    private = jwk.JWK.generate(kty="EC", crv="P-256", kid="k1")
    web_app.attributes = {**web_app.attributes, "jwks.string": '{"keys": [%s]}' % private.export_public()}
    web_app.save()
    return private


def set_attributes(client, **attributes):
    client.attributes = {**client.attributes, **attributes}
    client.save()


def push(http, *, secret=SECRET, client_id="web-app", **params):
    data = {"client_id": client_id, **PARAMS, **params}
    if secret is not None:
        data["client_secret"] = secret
    return http.post(PAR, {k: v for k, v in data.items() if v is not None})


def request_object(key, *, alg="ES256", **claims):
    now = int(time.time())
    body = {"iss": "web-app", "aud": ISSUER, "client_id": "web-app", "iat": now, "nbf": now, "exp": now + 60,
            "jti": uuid.uuid4().hex, **PARAMS, **claims}
    body = {k: v for k, v in body.items() if v is not None}
    signing_key = key if alg not in jose.SYMMETRIC else SECRET.encode()
    return jose.sign(body, alg=alg, key=signing_key, kid="k1" if alg not in jose.SYMMETRIC else "")


def sign_in(http, page):
    """Fill the login form of ``page``: the redirect back to the client (at once, for a browser
    signed in already)."""
    if page.status_code == 302:
        return page
    assert page.status_code == 200 and 'name="password"' in page.content.decode(), page.content[:400]
    return http.post(action_of(page), {"username": "bob", "password": PASSWORD})


def code_of(response):
    query = redirect_query(response)
    assert "code" in query, query
    return query["code"][0]


def redeem(http, code, **headers):
    return http.post(TOKEN, {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
                             "client_id": "web-app", "client_secret": SECRET, "code_verifier": VERIFIER}, **headers)
