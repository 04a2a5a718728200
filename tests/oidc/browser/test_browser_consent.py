"""Consent for clients with Consent required (OIDC Core §3.1.2.4): the page lists the requested
client scopes by their consent texts; No sends access_denied back; Yes is remembered per user and
client, so the page comes back only for scopes not granted yet or with prompt=consent; with
prompt=none a missing consent is consent_required."""
import pytest

from oidc.models import ConsentGrant
from realms.models import ClientScope, Event
from tests.oidc.browser.conftest import make_client
from tests.oidc.browser.test_browser_authorize import AUTH, _action, _query, _sign_in

REDIRECT = "https://consent.example/cb"


@pytest.fixture(autouse=True)
def consent_app(realm):
    realm.events_enabled = True
    realm.save()
    return make_client(realm, "consent-app", redirect_uris=[REDIRECT], consent_required=True)


def _params(**extra):
    return {"client_id": "consent-app", "redirect_uri": REDIRECT, "response_type": "code", "scope": "openid",
            "state": "st-c", **extra}


def _consent_page(response):
    assert response.status_code == 200, response.content[:300]
    assert "Do you grant these access privileges?" in response.content.decode()
    return response


def test_deny_then_accept_is_remembered(client, realm, user_with_password):
    page = _consent_page(_sign_in(client, _params()))
    body = page.content.decode()
    assert "User profile" in body and "Email address" in body and "web-origins" not in body
    denied = client.post(_action(page), {"consent": "deny"})
    parts, query = _query(denied)
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == REDIRECT
    assert query["error"] == "access_denied" and query["state"] == "st-c" and "code" not in query
    assert Event.objects.filter(type="LOGIN_ERROR", error="rejected_by_user").exists()
    assert not ConsentGrant.objects.exists()

    page = _consent_page(client.get(AUTH, _params(state="again")))  # signed in, still not granted
    accepted = client.post(_action(page), {"consent": "accept"})
    assert _query(accepted)[1]["code"] and _query(accepted)[1]["state"] == "again"
    granted = set(ClientScope.objects.filter(pk__in=ConsentGrant.objects.get().scope_ids)
                  .values_list("name", flat=True))
    assert {"profile", "email"} <= granted and "phone" not in granted
    assert Event.objects.filter(type="GRANT_CONSENT").count() == 1
    assert Event.objects.get(type="LOGIN").details["consent"] == "consent_granted"

    # Granted: a code at once. A scope not granted yet asks again; prompt=consent always asks.
    assert _query(client.get(AUTH, _params(state="third")))[1]["code"]
    assert "Phone number" in _consent_page(client.get(AUTH, _params(scope="openid phone"))).content.decode()
    _consent_page(client.get(AUTH, _params(prompt="consent")))
    assert _query(client.get(AUTH, _params(prompt="none", scope="openid phone")))[1]["error"] == "consent_required"


def test_consent_code_works_at_the_token_endpoint(client, realm, user_with_password):
    page = _consent_page(_sign_in(client, _params()))
    code = _query(client.post(_action(page), {"consent": "accept"}))[1]["code"]
    tokens = client.post("/realms/acme/protocol/openid-connect/token", {
        "grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
        "client_id": "consent-app", "client_secret": "secret-of-consent-app"})
    assert tokens.status_code == 200 and tokens.json()["id_token"]


def test_clients_without_consent_required_never_ask(client, realm, client_app, user_with_password):
    response = _sign_in(client, {"client_id": "web-app", "redirect_uri": "https://app.example/cb",
                                 "response_type": "code", "scope": "openid", "prompt": "consent"})
    assert _query(response)[1]["code"] and not ConsentGrant.objects.exists()

