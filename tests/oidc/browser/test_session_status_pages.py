"""The check-session iframe, its init check and the third-party-cookie probe pages: framable only
by the web origins of the realm's clients (CSP frame-ancestors, no X-Frame-Options); init answers
204 only for an enabled client and one of its web origins; the SERVICE_SESSION cookie is
script-readable, holds SHA-256 of the session id (never the signed SSO cookie) and goes with logout."""
import base64
import hashlib
import re

import pytest

from realms.models import UserSession
from tests.oidc.browser.conftest import PASSWORD, make_client
from tests.oidc.browser.test_browser_authorize import AUTH, _action, _params, _sign_in

OIDC = "/realms/acme/protocol/openid-connect/"
PAGES = ["login-status-iframe.html", "3p-cookies/step1.html", "3p-cookies/step2.html"]


@pytest.fixture
def spa(realm):
    return make_client(realm, "spa", public_client=True, redirect_uris=["https://spa.example/*"],
                       web_origins=["+", "https://admin.spa.example"])


@pytest.mark.parametrize("page", PAGES)
def test_pages_are_framable_only_by_client_web_origins(client, spa, page):
    make_client(spa.realm, "off", enabled=False, redirect_uris=["https://off.example/*"], web_origins=["+"])
    response = client.get(OIDC + page)
    assert response.status_code == 200 and response["Content-Type"].startswith("text/html")
    assert not response.has_header("X-Frame-Options")
    assert response["Content-Security-Policy"] == \
        "frame-ancestors 'self' https://admin.spa.example https://spa.example"
    assert "no-cache" in response["Cache-Control"]
    assert client.head(OIDC + page).status_code == 200
    assert client.post(OIDC + page).status_code == 405


def test_frame_ancestors_follow_client_changes(client, spa):
    assert "https://new.example" not in client.get(OIDC + PAGES[0])["Content-Security-Policy"]
    spa.web_origins = ["https://new.example", "https://x.example; frame-ancestors *", "javascript:alert(1)"]
    spa.save()
    assert client.get(OIDC + PAGES[0])["Content-Security-Policy"] == "frame-ancestors 'self' https://new.example"


@pytest.mark.parametrize("client_id, origin, status", [
    ("spa", "https://spa.example", 204),            # "+": the redirect URIs' origin
    ("spa", "https://admin.spa.example", 204),      # listed
    ("spa", "http://testserver", 204),              # the server's own origin
    ("spa", "https://evil.example", 403),
    ("spa", "", 403),
    ("nobody", "https://spa.example", 403),
    ("off", "https://off.example", 403),            # disabled client
])
def test_init_checks_client_and_origin(client, spa, client_id, origin, status):
    make_client(spa.realm, "off", enabled=False, redirect_uris=["https://off.example/*"], web_origins=["+"])
    response = client.get(OIDC + "login-status-iframe.html/init", {"client_id": client_id, "origin": origin})
    assert response.status_code == status and response.content == b""


def test_session_state_cookie(client, realm, client_app, user_with_password):
    response = _sign_in(client, _params())
    user_session = UserSession.objects.get(user=user_with_password)
    cookie = response.cookies["SERVICE_SESSION"]
    expected = base64.urlsafe_b64encode(hashlib.sha256(user_session.pk.encode()).digest()).rstrip(b"=").decode()
    assert cookie.value == expected and user_session.pk not in cookie.value
    assert not cookie["httponly"] and cookie["path"] == "/realms/acme/" and cookie["samesite"] == "Lax"
    assert response.cookies["SERVICE_IDENTITY"]["httponly"]  # the credential stays out of reach of scripts
    logout = client.get(OIDC + "logout")
    confirmed = client.post(OIDC + "logout", dict(re.findall(r'name="([^"]+)" value="([^"]*)"',
                                                              logout.content.decode())))
    assert confirmed.cookies["SERVICE_SESSION"].value == ""


def test_session_state_cookie_is_samesite_none_over_https(client, realm, client_app, user_with_password):
    page = client.get(AUTH, _params(), secure=True)
    response = client.post(_action(page), {"username": "bob", "password": PASSWORD}, secure=True)
    cookie = response.cookies["SERVICE_SESSION"]
    assert cookie["secure"] and cookie["samesite"] == "None"
    assert response.cookies["SERVICE_IDENTITY"]["samesite"] == "Lax"
