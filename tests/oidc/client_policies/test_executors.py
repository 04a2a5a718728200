"""Executors beyond the FAPI 2 security profile's rules (test_fapi2.py): fapi-2-message-signing's
signed request objects, and the common executors' own settings, each refusing with Keycloak's
error at its event."""
import time
import uuid

import pytest

from oidc import jose
from oidc.codes import s256_challenge
from tests.oidc.par.conftest import AUTH, ISSUER, PAR, REDIRECT, TOKEN, VERIFIER, sign_in
from tests.realms.test_signin import redirect_query

from .conftest import credentials, put_policy
from .test_fapi2 import FAPI_PARAMS, redirected_error

pytestmark = pytest.mark.django_db


def request_object(key, **claims):
    now = int(time.time())
    body = {"iss": "fapi", "aud": ISSUER, "client_id": "fapi", "iat": now, "nbf": now, "exp": now + 60,
            "jti": uuid.uuid4().hex, **FAPI_PARAMS, **claims}
    return jose.sign({k: v for k, v in body.items() if v is not None}, alg="ES256", key=key, kid="fapi-key")


def push_object(http, key, **claims):
    answer = http.post(PAR, {**credentials(key), "request": request_object(key, **claims)})
    assert answer.status_code == 201, answer.content
    page = http.get(AUTH, {"client_id": "fapi", "request_uri": answer.json()["request_uri"]})
    return sign_in(http, page) if page.status_code == 200 else page


@pytest.fixture
def message_signing(realm, fapi):
    put_policy(realm, "fapi-2-dpop-message-signing")


def test_signed_request_object_by_par_accepted(client, fapi, bob, client_key, message_signing):
    assert "code" in redirect_query(push_object(client, client_key))


def test_request_object_required(client, fapi, bob, client_key, message_signing):
    answer = client.post(PAR, {**credentials(client_key), **FAPI_PARAMS})
    page = client.get(AUTH, {"client_id": "fapi", "request_uri": answer.json()["request_uri"]})
    redirected_error(page, "Invalid parameter: : 'request' or 'request_uri'")


@pytest.mark.parametrize(("claims", "description"), [
    ({"nbf": None}, "Missing parameter in the 'request' object: nbf"),
    ({"nbf": int(time.time()) - 4000}, "Request's available period is long"),
    ({"exp": None}, "Missing parameter in the 'request' object: exp"),
])
def test_request_object_rules(client, fapi, bob, client_key, message_signing, claims, description):
    # A pushed request's object is refused as its request_uri.
    redirected_error(push_object(client, client_key, **claims), description, error="invalid_request_uri")


def test_available_period_setting(client, realm, fapi, bob, client_key):
    put_policy(realm, "ro", profiles={"profiles": [{"name": "ro", "executors": [
        {"executor": "secure-request-object", "configuration": {"verify-nbf": True, "available-period": "30"}}]}]})
    redirected_error(push_object(client, client_key), "Request's available period is long",
                     error="invalid_request_uri")


def test_confidential_client(client, realm, bob):
    from tests.oidc.browser.conftest import make_client
    spa = make_client(realm, "spa", public_client=True, redirect_uris=[REDIRECT])
    spa.roles.create(realm=realm, name="fapi")
    put_policy(realm, "cc", profiles={"profiles": [{"name": "cc", "executors": [{"executor": "confidential-client"}]}]})
    answer = client.get(AUTH, {"client_id": "spa", **FAPI_PARAMS})
    redirected_error(answer, "invalid client access type", error="invalid_client")


@pytest.mark.parametrize(("allow", "status"), [(False, 302), (True, 200)])
def test_secure_client_uris_localhost_setting(client, realm, fapi, bob, allow, status):
    fapi.redirect_uris = ["http://localhost:8000/cb"]
    fapi.save()
    put_policy(realm, "uris", profiles={"profiles": [{"name": "uris", "executors": [
        {"executor": "secure-client-uris", "configuration": {"allow-http-on-localhost": allow}}]}]})
    answer = client.get(AUTH, {"client_id": "fapi", **FAPI_PARAMS, "redirect_uri": "http://localhost:8000/cb"})
    assert answer.status_code == status
    if not allow:
        redirected_error(answer, "Invalid redirect_uri")


def test_dpop_bound_authorization_code_setting(client, realm, fapi, bob, client_key):
    put_policy(realm, "dpop", profiles={"profiles": [{"name": "dpop", "executors": [
        {"executor": "dpop-bind-enforcer", "configuration": {"enforce-authorization-code-binding-to-dpop": True}}]}]})
    answer = client.get(AUTH, {"client_id": "fapi", **FAPI_PARAMS})
    redirected_error(answer, "Missing parameter: dpop_jkt")
    answer = client.get(AUTH, {"client_id": "fapi", **FAPI_PARAMS, "dpop_jkt": "A" * 43})
    assert answer.status_code == 200


def test_require_client_assertion_setting(client, realm, fapi, client_key):
    from tests.oidc.browser.conftest import make_client
    app = make_client(realm, "app")
    app.roles.create(realm=realm, name="fapi")
    put_policy(realm, "jwt", profiles={"profiles": [{"name": "jwt", "executors": [
        {"executor": "secure-signature-algorithm-signed-jwt", "configuration": {"require-client-assertion": True}}]}]})
    answer = client.post(TOKEN, {"grant_type": "refresh_token", "refresh_token": "x", "client_id": "app",
                                 "client_secret": "secret-of-app"})
    assert answer.status_code == 400
    assert answer.json() == {"error": "invalid_request", "error_description": "not allowed input format."}


def with_service_account(client):
    from realms.users.accounts import enable_service_account
    client.service_accounts_enabled = True
    client.save()
    enable_service_account(client)


def test_executors_act_at_keycloaks_events_only(client, realm, fapi, client_key):
    """A client credentials grant is Keycloak's SERVICE_ACCOUNT_TOKEN_REQUEST: the holder-of-key
    enforcer acts there, the DPoP one does not."""
    with_service_account(fapi)
    grant = {"grant_type": "client_credentials", **credentials(client_key)}
    put_policy(realm, "fapi-2-dpop-security-profile")
    answer = client.post(TOKEN, grant)
    assert answer.status_code == 200, answer.content
    put_policy(realm, "fapi-2-security-profile")
    grant = {"grant_type": "client_credentials", **credentials(client_key)}
    answer = client.post(TOKEN, grant)
    assert answer.json() == {"error": "invalid_request",
                             "error_description": "Client Certification missing for MTLS HoK Token Binding"}


def test_dpop_at_userinfo(client, realm, fapi, client_key):
    with_service_account(fapi)
    token = client.post(TOKEN, {"grant_type": "client_credentials", "scope": "openid",
                                **credentials(client_key)}).json()["access_token"]  # a bearer token
    put_policy(realm, "dpop", profiles={"profiles": [{"name": "dpop", "executors": [
        {"executor": "dpop-bind-enforcer"}]}]})
    answer = client.get("/realms/acme/protocol/openid-connect/userinfo", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert answer.status_code in (400, 401)
    assert "DPoP proof is missing" in str(answer.content) + answer.get("WWW-Authenticate", "")


def test_pkce_challenge_s256_accepted_without_client_setting(client, realm, fapi, bob, client_key):
    put_policy(realm, "pkce", profiles={"profiles": [{"name": "pkce", "executors": [{"executor": "pkce-enforcer"}]}]})
    answer = client.get(AUTH, {"client_id": "fapi", **FAPI_PARAMS, "code_challenge": s256_challenge(VERIFIER)})
    assert answer.status_code == 200
