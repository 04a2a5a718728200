"""``/realms/<realm>/account`` without its trailing slash is Keycloak's account resource too:
keycloak-js's ``loadUserProfile()`` asks it from another origin with a bearer token, so the CORS
preflight and the JSON are answered there, not redirected (a browser refuses a redirected
preflight). A browser asking for the page is still sent to ``account/``."""
import json

import pytest
from django.test import Client

from realms.models import Client as ClientModel
from realms.models import User
from tests.realms.test_account_api import acme, bob, token  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db
SPA = "https://spa.example"


@pytest.fixture
def access(acme, bob):  # noqa: F811
    ClientModel.objects.filter(realm=acme, client_id="account-console").update(web_origins=[SPA])
    return token("acme", "bob")["access_token"]


def test_the_preflight_is_answered_without_a_redirect(acme):  # noqa: F811
    resp = Client().options("/realms/acme/account", HTTP_ORIGIN=SPA, HTTP_ACCESS_CONTROL_REQUEST_METHOD="GET",
                            HTTP_ACCESS_CONTROL_REQUEST_HEADERS="authorization")
    assert resp.status_code == 200 and not resp.has_header("Location")
    assert resp["Access-Control-Allow-Origin"] == SPA
    assert "GET" in resp["Access-Control-Allow-Methods"].split(", ")
    assert "Authorization" in resp["Access-Control-Allow-Headers"].split(", ")


def test_the_profile_json_with_cors_for_the_origins_the_token_allows(access):
    client = Client(HTTP_AUTHORIZATION=f"Bearer {access}", HTTP_ACCEPT="application/json")
    resp = client.get("/realms/acme/account", HTTP_ORIGIN=SPA)
    assert resp.status_code == 200, resp.content
    assert resp["Access-Control-Allow-Origin"] == SPA
    body = resp.json()
    assert {k: body[k] for k in ("username", "email", "firstName", "lastName", "emailVerified")} == {
        "username": "bob", "email": "bob@example.com", "firstName": "Bob", "lastName": "B", "emailVerified": False}
    assert body == client.get("/realms/acme/account/").json()  # the same resource as with the slash
    assert "Access-Control-Allow-Origin" not in client.get("/realms/acme/account", HTTP_ORIGIN="https://evil.example")


def test_without_a_token_the_json_is_401_not_a_redirect(acme):  # noqa: F811
    resp = Client(HTTP_ACCEPT="application/json").get("/realms/acme/account", HTTP_ORIGIN=SPA)
    assert resp.status_code == 401 and not resp.has_header("Location")


def test_a_profile_update_posted_there_arrives(access, bob):  # noqa: F811
    client = Client(HTTP_AUTHORIZATION=f"Bearer {access}")
    resp = client.post("/realms/acme/account", json.dumps({"username": "bob", "email": "bob@example.com",
                                                           "firstName": "Robert", "lastName": "B"}),
                       content_type="application/json")
    assert resp.status_code == 204, resp.content
    assert User.objects.get(pk=bob.pk).first_name == "Robert"
    bad = client.post("/realms/acme/account", json.dumps({"username": "bob", "email": "not-an-email"}),
                      content_type="application/json")
    assert bad.status_code == 400 and User.objects.get(pk=bob.pk).email == "bob@example.com"


def test_a_browser_asking_for_the_page_is_sent_to_the_console(acme):  # noqa: F811
    resp = Client().get("/realms/acme/account?referrer=web-app", HTTP_ACCEPT="text/html")
    assert resp.status_code == 302 and resp["Location"] == "account/?referrer=web-app"
