"""What the fuzz targets found, one test each (each failed before its fix): a 500 or an exception
other than the parser's own error. The ambassador configuration findings are in
tests/ambassador/test_config.py."""
import base64
import dataclasses
import json

import pytest
from django.test import Client as HttpClient
from django.test import RequestFactory

from realms.http.input_guard import _has_nul
from tests.conftest import once_per_module

from .targets import REALM, _admin_token, _realm, _webhook_endpoint, run_client_assertion

pytestmark = pytest.mark.django_db


def _refused(response):
    assert response.status_code == 400, response.content
    assert response.json()["error"] == "invalid_request"


@pytest.fixture(scope="module")
def shared(django_db_setup, django_db_blocker):
    """Realm ``fz`` and a master admin's token, made once for the module: the realm import, an RSA
    key and three Argon2 hashes were most of each test's time."""
    def make():
        state = _realm()
        state.admin_token = _admin_token()
        return state

    yield from once_per_module(django_db_blocker, make)


@pytest.fixture
def oidc(shared, db, fresh_caches):
    return dataclasses.replace(shared, http=HttpClient())  # no cookie of an earlier test


@pytest.fixture
def webhooks(oidc):
    # Per test, not shared: an endpoint would write every event of the OIDC tests to the outbox.
    return dataclasses.replace(oidc, webhook_id=_webhook_endpoint())


@pytest.mark.parametrize("query", [
    "client_id=%00app&redirect_uri=https%3A%2F%2Fapp.example%2Fcb&response_type=code",  # client lookup
    "client_id=app&redirect_uri=%00https%3A%2F%2Fapp.example%2Fcb&response_type=code",  # LOGIN_ERROR event
    "client_id=app&redirect_uri=https%3A%2F%2Fapp.example%2Fcb&response_type=code&state=%00",  # auth session
])
def test_nul_in_authorization_request_is_400_not_500(oidc, query):
    _refused(oidc.http.get(f"/realms/{REALM}/protocol/openid-connect/auth", QUERY_STRING=query))


def test_nul_in_token_request_is_400_not_500(oidc):
    _refused(oidc.http.post(f"/realms/{REALM}/protocol/openid-connect/token",
                            data="grant_type=password&client_id=app%00&username=a&password=b",
                            content_type="application/x-www-form-urlencoded"))


def test_nul_in_path_is_400_not_500(oidc):
    _refused(oidc.http.get("/realms/f%00z/protocol/openid-connect/certs"))


def test_escaped_nul_in_json_is_400_and_an_escaped_backslash_is_not(webhooks):
    body = json.dumps({"url": "https://hooks.example/b", "description": "a\x00b"})
    assert "\\u0000" in body
    response = webhooks.http.post(f"/admin/realms/{REALM}/webhooks", data=body, content_type="application/json",
                                  HTTP_AUTHORIZATION=f"Bearer {webhooks.admin_token}")
    _refused(response)
    factory = RequestFactory()
    for text, refused in (('{"d": "\\\\u0000"}', False), ('{"d": "\\\\\\u0000"}', True)):
        assert _has_nul(factory.post("/x", data=text, content_type="application/json")) is refused, text


@pytest.mark.parametrize("path, body, message", [
    ("", {"url": "https://hooks.example/b", "eventTypes": None}, "eventTypes is a list of event type names"),
    ("", {"url": []}, "url is a string"),
    ("", {"url": {"a": 1}}, "url is a string"),
    ("", {"url": "https://hooks.example/b", "description": ["x"]}, "description is a string"),
    ("", {"url": "https://hooks.example/b", "enabled": "yes"}, "enabled is a boolean"),
    ("/{id}/rotate-secret", {"signature": []}, "signature is v1 or v1a"),
    ("/{id}", {"url": ["https://hooks.example/b"]}, "url is a string"),
])
def test_webhook_api_values_of_the_wrong_type_are_400_not_500(webhooks, path, body, message):
    method = "put" if path == "/{id}" else "post"
    response = getattr(webhooks.http, method)(
        f"/admin/realms/{REALM}/webhooks" + path.format(id=webhooks.webhook_id), data=json.dumps(body),
        content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {webhooks.admin_token}")
    assert response.status_code == 400, response.content
    assert response.json() == {"errorMessage": message}


def test_webhook_api_deeply_nested_json_is_400_not_500(webhooks):
    response = webhooks.http.post(f"/admin/realms/{REALM}/webhooks", data="[" * 100_000 + "]" * 100_000,
                                  content_type="application/json",
                                  HTTP_AUTHORIZATION=f"Bearer {webhooks.admin_token}")
    assert response.status_code == 400


# A NUL decoded from inside a value (HTTP Basic credentials, a JWT claim) is past the edge guard:
# the client lookup (realms/data/realm_cache.py) finds no client rather than asking PostgreSQL.
@pytest.mark.parametrize("credentials", [b"app\x00:x", b"a%00pp:x"])
def test_nul_in_basic_client_id_is_401_not_500(oidc, credentials):
    response = oidc.http.post(f"/realms/{REALM}/protocol/openid-connect/token", data="grant_type=client_credentials",
                              content_type="application/x-www-form-urlencoded",
                              HTTP_AUTHORIZATION="Basic " + base64.b64encode(credentials).decode())
    assert response.status_code == 401


def test_nul_in_client_assertion_subject_is_401_not_500(oidc):
    claims = {"iss": "jwt-secret\x00", "sub": "jwt-secret\x00", "aud": "x", "exp": 1}
    run_client_assertion(oidc, b'1{"alg": "HS256"}\n' + json.dumps(claims).encode())
