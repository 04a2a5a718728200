"""What clients written for Keycloak rely on beside the standard: logout by refresh token with
client authentication (204, the session ended, Keycloak's errors), the realm info document,
HEAD wherever GET is served, and the JWKS content type Keycloak sends."""
import base64

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.hashes import SHA256

from realms.models import Event, UserSession

from .conftest import SECRET, basic, code_for, exchange, refresh, url
from .test_endpoints import issuer, signed_tokens


@pytest.fixture
def realm(realm):
    realm.events_enabled = True
    realm.save()
    return realm


def logout(http, realm, refresh_token, *, client_id="app", secret=SECRET, **extra):
    headers = {k: extra.pop(k) for k in list(extra) if k.startswith("HTTP_")}
    data = {"refresh_token": refresh_token, "client_id": client_id, **extra}
    if secret:
        data["client_secret"] = secret
    return http.post(url(realm, "logout"), data, **headers)


def test_logout_by_refresh_token_ends_the_session(http, realm, alice):
    body, user_session = signed_tokens(http, realm, alice)
    response = logout(http, realm, body["refresh_token"])
    assert response.status_code == 204 and response.content == b""
    assert not UserSession.objects.filter(pk=user_session.pk).exists()
    refused = refresh(http, realm, body["refresh_token"])
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_grant"
    event = Event.objects.get(type="LOGOUT")
    assert (event.client_id, event.user_id, event.session_id) == ("app", alice.pk, user_session.pk)
    # Once more: nothing left to end, still 204 (as Keycloak answers).
    assert logout(http, realm, body["refresh_token"]).status_code == 204


def test_logout_by_refresh_token_with_basic_authentication(http, realm, alice):
    body, user_session = signed_tokens(http, realm, alice)
    response = http.post(url(realm, "logout"), {"refresh_token": body["refresh_token"]},
                         HTTP_AUTHORIZATION=basic("app", SECRET))
    assert response.status_code == 204
    assert not UserSession.objects.filter(pk=user_session.pk).exists()


def test_logout_by_offline_token_ends_the_offline_session_only(http, realm, alice):
    code, user_session = code_for(realm, alice, scope="openid offline_access")
    body = exchange(http, realm, code).json()
    offline = UserSession.objects.get(offline=True)
    assert logout(http, realm, body["refresh_token"]).status_code == 204
    assert not UserSession.objects.filter(pk=offline.pk).exists()
    assert UserSession.objects.filter(pk=user_session.pk).exists()


def test_logout_by_refresh_token_of_another_client_is_refused(http, realm, alice):
    body, user_session = signed_tokens(http, realm, alice)
    response = logout(http, realm, body["refresh_token"], client_id="spa", secret="")
    assert response.status_code == 400
    assert response.json() == {"error": "invalid_grant", "error_description":
                               "Invalid refresh token. Token client and authorized client don't match"}
    assert UserSession.objects.filter(pk=user_session.pk).exists()
    assert Event.objects.get(type="LOGOUT_ERROR").error == "invalid_token"


@pytest.mark.parametrize("data, status, error, description", [
    ({"client_id": "app", "client_secret": "wrong", "refresh_token": "x"}, 401, "invalid_client",
     "Invalid client or Invalid client credentials"),
    ({"client_id": "nobody", "refresh_token": "x"}, 401, "invalid_client",
     "Invalid client or Invalid client credentials"),
    ({"client_id": "app", "client_secret": SECRET, "refresh_token": ""}, 400, "invalid_request", "No refresh token"),
    ({"client_id": "app", "client_secret": SECRET, "refresh_token": "not-a-token"}, 400, "invalid_grant",
     "Invalid refresh token"),
    ({"client_id": "api", "client_secret": "api-secret-" + "y" * 20, "refresh_token": "x"}, 400, "invalid_client",
     "Bearer-only not allowed"),
])
def test_bad_logout_by_refresh_token(http, realm, alice, data, status, error, description):
    _, user_session = signed_tokens(http, realm, alice)
    response = http.post(url(realm, "logout"), data)
    assert response.status_code == status
    assert response.json() == {"error": error, "error_description": description}
    assert UserSession.objects.filter(pk=user_session.pk).exists()


def test_an_access_or_id_token_is_not_a_refresh_token(http, realm, alice):
    body, user_session = signed_tokens(http, realm, alice)
    for token in (body["access_token"], body["id_token"]):
        response = logout(http, realm, token)
        assert response.status_code == 400 and response.json()["error"] == "invalid_grant"
    assert UserSession.objects.filter(pk=user_session.pk).exists()


def test_rp_initiated_post_is_unchanged(http, realm, alice):
    body, user_session = signed_tokens(http, realm, alice)
    response = http.post(url(realm, "logout"), {"id_token_hint": body["id_token"]})
    assert response.status_code == 200 and b"<html" in response.content.lower()
    assert not UserSession.objects.filter(pk=user_session.pk).exists()


def test_logout_by_refresh_token_answers_the_clients_origin(http, realm, alice):
    body, _ = signed_tokens(http, realm, alice)
    response = logout(http, realm, body["refresh_token"], HTTP_ORIGIN="https://app.example")
    assert response.status_code == 204 and response["Access-Control-Allow-Origin"] == "https://app.example"


def test_realm_info_is_keycloaks(http, realm, alice):
    response = http.get(f"/realms/{realm.name}")
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    info = response.json()
    assert set(info) == {"realm", "public_key", "token-service", "account-service", "tokens-not-before"}
    assert info["realm"] == realm.name and info["tokens-not-before"] == 0
    assert info["token-service"] == issuer(realm) + "/protocol/openid-connect"
    assert info["account-service"] == issuer(realm) + "/account"
    # public_key is the SubjectPublicKeyInfo (base64 DER) of the key signing RS256 tokens.
    key = serialization.load_der_public_key(base64.b64decode(info["public_key"]))
    body, _ = signed_tokens(http, realm, alice)
    head, claims, sig = body["access_token"].split(".")
    signature = base64.urlsafe_b64decode(sig + "=" * (-len(sig) % 4))
    key.verify(signature, f"{head}.{claims}".encode(), padding.PKCS1v15(), SHA256())  # raises if not
    assert http.get("/realms/no-such-realm").status_code == 404


@pytest.mark.parametrize("path", ["", "/.well-known/openid-configuration", "/protocol/openid-connect/certs"])
def test_head_where_get_is_served(http, realm, path):
    get = http.get(f"/realms/{realm.name}{path}")
    head = http.head(f"/realms/{realm.name}{path}")
    assert head.status_code == get.status_code == 200
    assert head["Content-Type"] == get["Content-Type"] == "application/json"
    assert head.content == b""


def test_head_on_the_saml_descriptor(http, realm):
    path = f"/realms/{realm.name}/protocol/saml/descriptor"
    head = http.head(path)
    assert head.status_code == 200 and head["Content-Type"] == http.get(path)["Content-Type"]


def test_head_on_userinfo(http, realm, alice):
    body, _ = signed_tokens(http, realm, alice)
    auth = {"HTTP_AUTHORIZATION": "Bearer " + body["access_token"]}
    assert http.head(url(realm, "userinfo"), **auth).status_code == 200
    assert http.head(url(realm, "userinfo")).status_code == 401


def test_jwks_content_type_is_keycloaks(http, realm):
    response = http.get(url(realm, "certs"))
    assert response["Content-Type"] == "application/json" and response.json()["keys"]
