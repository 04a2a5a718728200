"""The authorization endpoint (spec 1 §3-§5): errors before the redirect URI is trusted are a
page, after it a redirect; PKCE rules; prompt and max_age; sign-in through the form; SSO for a
second client; events; CSRF; the SERVICE_IDENTITY cookie."""
import re
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
import time_machine
from django.test import Client as HttpClient
from django.utils import timezone

from oidc import jose
from oidc.codes import s256_challenge
from oidc.models import AuthorizationCode
from realms.models import ClientSession, Event, UserSession
from realms.signin import bruteforce
from tests.oidc.browser.conftest import PASSWORD, make_client

AUTH = "/realms/acme/protocol/openid-connect/auth"
VERIFIER = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
CHALLENGE = s256_challenge(VERIFIER)


@pytest.fixture(autouse=True)
def _save_events(realm):
    realm.events_enabled = True
    realm.save()


def _params(client_id="web-app", redirect_uri="https://app.example/cb", **extra):
    return {"client_id": client_id, "redirect_uri": redirect_uri, "response_type": "code",
            "scope": "openid", "state": "st-123", **extra}


def _query(response):
    assert response.status_code == 302, response.content[:500]
    parts = urlsplit(response["Location"])
    return parts, {k: v[0] for k, v in parse_qs(parts.query).items()}


def _action(response):
    return re.search(r'action="([^"]+)"', response.content.decode()).group(1).replace("&amp;", "&")


def _sign_in(http, params, username="bob", password=PASSWORD):
    page = http.get(AUTH, params)
    assert page.status_code == 200 and b'name="password"' in page.content
    return http.post(_action(page), {"username": username, "password": password})


def _events(type_):
    return list(Event.objects.filter(type=type_).order_by("time"))


# Before the redirect URI is trusted: a page, never a redirect ---------------------------------

@pytest.mark.parametrize("change, message", [
    ({"client_id": "nope"}, "Client not found."),
    ({"client_id": ""}, "Missing parameter: client_id"),
    ({"redirect_uri": "https://evil.example/cb"}, "Invalid parameter: redirect_uri"),
    ({"redirect_uri": "https://app.example/cb/"}, "Invalid parameter: redirect_uri"),
    ({"redirect_uri": ""}, "Missing parameter: redirect_uri"),
])
def test_untrusted_errors_are_a_page(client, client_app, change, message):
    response = client.get(AUTH, _params(**change) if "client_id" not in change else {**_params(), **change})
    assert response.status_code == 400 and not response.has_header("Location")
    assert message in response.content.decode()
    assert _events("LOGIN_ERROR")


def test_duplicated_redirect_uri_is_a_page(client, client_app):
    response = client.get(AUTH + "?client_id=web-app&redirect_uri=https://app.example/cb"
                                 "&redirect_uri=https://evil.example/cb&response_type=code")
    assert response.status_code == 400 and "Duplicated parameter: redirect_uri" in response.content.decode()


@pytest.mark.parametrize("fields, message", [
    ({"enabled": False}, "Client disabled."),
    ({"bearer_only": True}, "Bearer-only"),
])
def test_client_state_errors_are_a_page(client, realm, fields, message):
    make_client(realm, "odd", redirect_uris=["https://odd.example/cb"], **fields)
    response = client.get(AUTH, _params("odd", "https://odd.example/cb"))
    assert response.status_code == 400 and message in response.content.decode()


def test_unknown_realm_is_404(client):
    assert client.get("/realms/nowhere/protocol/openid-connect/auth", _params()).status_code == 404


# After: errors go back to the client with state --------------------------------------------------

@pytest.mark.parametrize("change, error", [
    ({"response_type": "code refresh_token"}, "unsupported_response_type"),
    ({"response_type": ""}, "invalid_request"),
    ({"scope": "openid no-such-scope"}, "invalid_scope"),
    ({"response_mode": "web_message"}, "invalid_request"),
    ({"prompt": "none login"}, "invalid_request"),
    ({"max_age": "soon"}, "invalid_request"),
    ({"prompt": "none"}, "login_required"),
])
def test_trusted_errors_redirect_with_state_and_issuer(client, client_app, change, error):
    parts, query = _query(client.get(AUTH, {**_params(), **change}))
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == "https://app.example/cb"
    assert query["error"] == error and query["state"] == "st-123"
    assert query["iss"] == "http://testserver/realms/acme"
    assert "code" not in query


def test_standard_flow_disabled_is_unauthorized_client(client, realm):
    make_client(realm, "m2m", redirect_uris=["https://m2m.example/cb"], standard_flow_enabled=False)
    _, query = _query(client.get(AUTH, _params("m2m", "https://m2m.example/cb")))
    assert query["error"] == "unauthorized_client"


def test_optional_client_scope_is_accepted(client, client_app):
    page = client.get(AUTH, _params(scope="openid offline_access"))
    assert page.status_code == 200


# PKCE at the authorization step --------------------------------------------------------------------

@pytest.mark.parametrize("attrs, public, params, ok", [
    ({}, True, {}, False),  # public clients must use PKCE (RFC 9700)
    ({}, True, {"code_challenge": CHALLENGE, "code_challenge_method": "S256"}, True),
    ({}, True, {"code_challenge": VERIFIER, "code_challenge_method": "plain"}, False),
    ({}, True, {"code_challenge": VERIFIER}, False),  # method defaults to plain
    ({}, False, {}, True),  # confidential: PKCE recommended, not required
    ({}, False, {"code_challenge": VERIFIER, "code_challenge_method": "plain"}, False),
    ({"pkce.code.challenge.method": "S256"}, False, {}, False),
    ({"pkce.code.challenge.method": "S256"}, False, {"code_challenge": VERIFIER, "code_challenge_method": "plain"}, False),
    ({"pkce.code.challenge.method": "S256"}, False, {"code_challenge": CHALLENGE, "code_challenge_method": "S256"}, True),
    ({"pkce.code.challenge.method": "plain"}, False, {"code_challenge": VERIFIER, "code_challenge_method": "plain"}, True),
    ({}, False, {"code_challenge": CHALLENGE[:-1], "code_challenge_method": "S256"}, False),  # 42 chars
    ({}, False, {"code_challenge": CHALLENGE[:-1] + "=", "code_challenge_method": "S256"}, False),  # padding
    ({}, False, {"code_challenge": CHALLENGE, "code_challenge_method": "S512"}, False),
    ({}, False, {"code_challenge_method": "S256"}, False),  # method without a challenge
])
def test_pkce_rules(client, realm, attrs, public, params, ok):
    make_client(realm, "p", redirect_uris=["https://p.example/cb"], public_client=public, attributes=attrs)
    response = client.get(AUTH, _params("p", "https://p.example/cb", **params))
    if ok:
        assert response.status_code == 200 and b'name="username"' in response.content
    else:
        _, query = _query(response)
        assert query["error"] == "invalid_request" and query["state"] == "st-123"


# Signing in -------------------------------------------------------------------------------------

def test_sign_in_returns_code_with_state_and_sets_cookie(client, realm, client_app, user_with_password):
    response = _sign_in(client, _params(nonce="n-1", code_challenge=CHALLENGE, code_challenge_method="S256"))
    parts, query = _query(response)
    assert response["Location"].startswith("https://app.example/cb?code=")
    assert query["state"] == "st-123" and query["code"]
    cookie = response.cookies["SERVICE_IDENTITY"]
    assert cookie["httponly"] and cookie["samesite"] == "Lax" and cookie["path"] == "/realms/acme/"
    assert not cookie["secure"]  # plain http here; Secure over https (see below)
    user_session = UserSession.objects.get(user=user_with_password)
    assert user_session.auth_methods == ["pwd"]
    assert ClientSession.objects.filter(user_session=user_session, client=client_app,
                                        redirect_uri="https://app.example/cb").exists()
    code = AuthorizationCode.objects.get(user_session=user_session)
    assert (code.nonce, code.code_challenge, code.code_challenge_method) == ("n-1", CHALLENGE, "S256")
    login = _events("LOGIN")
    assert len(login) == 1 and login[0].user_id == user_with_password.pk
    assert login[0].session_id == user_session.pk and login[0].client_id == "web-app"


def test_cookies_are_secure_over_https(client, realm, client_app, user_with_password):
    page = client.get(AUTH, _params(), secure=True)
    assert page.cookies["AUTH_SESSION_ID"]["secure"] and page.cookies["AUTH_SESSION_ID"]["httponly"]
    response = client.post(_action(page), {"username": "bob", "password": PASSWORD}, secure=True)
    assert response.cookies["SERVICE_IDENTITY"]["secure"]


def test_second_client_gets_a_code_without_a_form(client, realm, client_app, public_app, user_with_password):
    _sign_in(client, _params())
    response = client.get(AUTH, _params("spa", "https://spa.example/cb", code_challenge=CHALLENGE,
                                         code_challenge_method="S256", state="second"))
    _, query = _query(response)
    assert query["state"] == "second" and query["code"]
    user_session = UserSession.objects.get(user=user_with_password)
    assert set(ClientSession.objects.filter(user_session=user_session).values_list("client__client_id", flat=True)) \
        == {"web-app", "spa"}


def _acr_of_code(client, response, **params):
    _, query = _query(response)
    tokens = client.post("/realms/acme/protocol/openid-connect/token", {
        "grant_type": "authorization_code", "code": query["code"], "redirect_uri": "https://app.example/cb",
        "client_id": "web-app", "client_secret": "secret-of-web-app", **params}).json()
    id_claims = jose.parse(tokens["id_token"])[1]
    assert jose.parse(tokens["access_token"])[1]["acr"] == id_claims["acr"]
    return id_claims["acr"], tokens


def test_acr_is_1_after_a_sign_in_and_0_when_answered_from_the_sso_cookie(client, realm, client_app,
                                                                          user_with_password):
    assert _acr_of_code(client, _sign_in(client, _params()))[0] == "1"
    acr, tokens = _acr_of_code(client, client.get(AUTH, _params(scope="openid offline_access")))
    assert acr == "0"
    refreshed = client.post("/realms/acme/protocol/openid-connect/token", {
        "grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "client_id": "web-app",
        "client_secret": "secret-of-web-app"}).json()
    assert jose.parse(refreshed["id_token"])[1]["acr"] == "0"  # an offline token keeps it
    assert _acr_of_code(client, _sign_in(client, _params(prompt="login")))[0] == "1"


def test_sso_survives_a_restart(client, realm, client_app, user_with_password):
    from django.core.cache import cache

    _sign_in(client, _params())
    cache.clear()
    _, query = _query(client.get(AUTH, _params(state="after-restart")))
    assert query["state"] == "after-restart" and query["code"]


def test_loopback_redirect_with_any_port_gets_the_code_there(client, realm, public_app, user_with_password):
    response = _sign_in(client, _params("spa", "http://127.0.0.1:49152/native", code_challenge=CHALLENGE,
                                        code_challenge_method="S256"))
    assert response["Location"].startswith("http://127.0.0.1:49152/native?code=")
    assert AuthorizationCode.objects.get().redirect_uri == "http://127.0.0.1:49152/native"


def test_form_post_response_mode(client, realm, client_app, user_with_password):
    response = _sign_in(client, _params(response_mode="form_post"))
    body = response.content.decode()
    assert response.status_code == 200 and 'action="https://app.example/cb"' in body
    assert 'name="state" value="st-123"' in body and 'name="code"' in body


@pytest.mark.parametrize("username, password, error", [
    ("bob", "wrong password", "invalid_user_credentials"),
    ("nobody", "whatever", "user_not_found"),
])
def test_failed_sign_in_shows_one_generic_error(client, realm, client_app, user_with_password, username, password, error):
    response = _sign_in(client, _params(), username, password)
    body = response.content.decode()
    assert response.status_code == 200 and "Invalid username or password." in body
    assert 'aria-describedby="input-error-username"' in body and 'id="input-error-username"' in body
    assert f'value="{username}"' in body
    events = _events("LOGIN_ERROR")
    assert [e.error for e in events] == [error] and events[0].details["username"] == username
    assert not UserSession.objects.exists()


def test_disabled_user_gets_the_same_message(client, realm, client_app, user_with_password):
    user_with_password.enabled = False
    user_with_password.save()
    response = _sign_in(client, _params())
    assert "Invalid username or password." in response.content.decode()
    assert _events("LOGIN_ERROR")[0].error == "user_disabled"


def test_locked_account_fails_with_the_same_message(client, realm, client_app, user_with_password):
    realm.brute_force_protected = True
    realm.failure_factor = 2
    realm.save()
    page = client.get(AUTH, _params())
    action = _action(page)
    for _ in range(2):
        client.post(action, {"username": "bob", "password": "wrong"})
    assert bruteforce.is_locked(realm, user_with_password)
    response = client.post(action, {"username": "bob", "password": PASSWORD})  # right password, still locked
    assert response.status_code == 200 and "Invalid username or password." in response.content.decode()
    assert [e.error for e in _events("LOGIN_ERROR")] == ["invalid_user_credentials"] * 2 + ["user_temporarily_disabled"]


def test_after_a_failure_the_same_form_can_succeed(client, realm, client_app, user_with_password):
    page = client.get(AUTH, _params())
    client.post(_action(page), {"username": "bob", "password": "wrong"})
    _, query = _query(client.post(_action(page), {"username": "bob", "password": PASSWORD}))
    assert query["code"]


def test_sign_in_by_email(client, realm, client_app, user_with_password):
    _, query = _query(_sign_in(client, _params(), "BOB@example.com"))
    assert query["code"]


def test_login_form_needs_csrf_token(realm, client_app, user_with_password):
    http = HttpClient(enforce_csrf_checks=True)
    page = http.get(AUTH, _params())
    response = http.post(_action(page), {"username": "bob", "password": PASSWORD})
    assert response.status_code == 403
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode()).group(1)
    ok = http.post(_action(page), {"username": "bob", "password": PASSWORD, "csrfmiddlewaretoken": token})
    assert ok.status_code == 302


def test_login_hint_prefills_username(client, client_app):
    page = client.get(AUTH, _params(login_hint="carol"))
    assert 'value="carol"' in page.content.decode()


def test_login_page_is_not_cacheable_and_accessible(client, client_app):
    page = client.get(AUTH, _params())
    body = page.content.decode()
    assert "no-store" in page["Cache-Control"]
    assert '<html lang="en" dir="ltr">' in body
    assert '<label for="username">' in body and '<label for="password">' in body


def test_prompt_none_with_session_returns_code(client, realm, client_app, user_with_password):
    _sign_in(client, _params())
    _, query = _query(client.get(AUTH, _params(prompt="none", state="silent")))
    assert query["code"] and query["state"] == "silent"


def test_prompt_none_with_pending_required_action_is_interaction_required(client, realm, client_app, user_with_password):
    _sign_in(client, _params())
    user_with_password.required_actions = ["UPDATE_PASSWORD"]
    user_with_password.save()
    _, query = _query(client.get(AUTH, _params(prompt="none")))
    assert query["error"] == "interaction_required"


def test_prompt_login_asks_again_and_keeps_the_session(client, realm, client_app, user_with_password):
    _sign_in(client, _params())
    first = UserSession.objects.get()
    with time_machine.travel(timezone.now() + timedelta(seconds=30), tick=False):
        response = _sign_in(client, _params(prompt="login"))
        assert _query(response)[1]["code"]
    again = UserSession.objects.get()
    assert again.pk == first.pk and again.auth_time > first.auth_time


def test_max_age_exceeded_asks_again(client, realm, client_app, user_with_password):
    _sign_in(client, _params())
    with time_machine.travel(timezone.now() + timedelta(seconds=120), tick=False):
        page = client.get(AUTH, _params(max_age="60"))
        assert page.status_code == 200 and b'name="password"' in page.content
        _, query = _query(client.get(AUTH, _params(max_age="600")))
        assert query["code"]
        _, query = _query(client.get(AUTH, _params(max_age="60", prompt="none")))
        assert query["error"] == "login_required"


def test_other_user_signing_in_ends_the_previous_session(client, realm, client_app, user_with_password):
    from realms.users.accounts import create_user

    create_user(realm, "carol", password="carol's password")
    _sign_in(client, _params())
    bob_session = UserSession.objects.get(user=user_with_password)
    # The re-authentication page shows bob fixed; "Restart login" lets another user sign in.
    page = client.get(AUTH, _params(prompt="login")).content.decode()
    assert '<span id="kc-attempted-username">bob</span>' in page
    restart = re.search(r'id="reset-login" href="([^"]+)"', page).group(1).replace("&amp;", "&")
    client.post(_action(client.get(restart)), {"username": "carol", "password": "carol's password"})
    assert not UserSession.objects.filter(pk=bob_session.pk).exists()
    assert UserSession.objects.get().user.username == "carol"


def test_tampered_cookie_is_ignored(client, realm, client_app, user_with_password):
    _sign_in(client, _params())
    value = client.cookies["SERVICE_IDENTITY"].value
    client.cookies["SERVICE_IDENTITY"] = value[:-2] + ("AA" if not value.endswith("AA") else "BB")
    assert client.get(AUTH, _params()).status_code == 200  # the form again


def test_ended_session_asks_again(client, realm, client_app, user_with_password):
    from realms.sso import sessions

    _sign_in(client, _params())
    sessions.end_session(UserSession.objects.get())
    assert client.get(AUTH, _params()).status_code == 200


def test_expired_sign_in_page_shows_an_error(client, realm, client_app, user_with_password):
    page = client.get(AUTH, _params())
    with time_machine.travel(timezone.now() + timedelta(seconds=realm.access_code_lifespan_login + 5), tick=False):
        response = client.post(_action(page), {"username": "bob", "password": PASSWORD})
    assert response.status_code == 400 and "expired" in response.content.decode()


def test_sign_in_page_belongs_to_the_browser_that_opened_it(client, realm, client_app, user_with_password):
    page = client.get(AUTH, _params())
    other = HttpClient()
    response = other.post(_action(page), {"username": "bob", "password": PASSWORD})
    assert response.status_code == 400 and not UserSession.objects.exists()


def test_update_password_required_action_through_the_pages(client, realm, client_app, user_with_password):
    user_with_password.required_actions = ["UPDATE_PASSWORD"]
    user_with_password.save()
    response = _sign_in(client, _params())
    assert response.status_code == 200 and b'name="password-new"' in response.content
    done = client.post(_action(response), {"password-new": "brand new pw", "password-confirm": "brand new pw"})
    _, query = _query(done)
    assert query["code"] and query["state"] == "st-123"
    user_with_password.refresh_from_db()
    assert user_with_password.required_actions == []
    assert _events("UPDATE_PASSWORD")


def test_remember_me_keeps_the_cookie_beyond_the_browser(client, realm, client_app, user_with_password):
    realm.remember_me = True
    realm.sso_session_max_lifespan_remember_me = 7 * 86400
    realm.save()
    page = client.get(AUTH, _params())
    assert b'name="rememberMe"' in page.content
    response = client.post(_action(page), {"username": "bob", "password": PASSWORD, "rememberMe": "on"})
    assert response.cookies["SERVICE_IDENTITY"]["max-age"] == 7 * 86400
    assert UserSession.objects.get().remember_me


def test_session_cookie_without_remember_me_ends_with_the_browser(client, realm, client_app, user_with_password):
    response = _sign_in(client, _params())
    assert response.cookies["SERVICE_IDENTITY"]["max-age"] == ""
    assert not UserSession.objects.get().remember_me


def test_two_tabs_sign_in_independently(client, realm, client_app, public_app, user_with_password):
    first = client.get(AUTH, _params(state="tab-1"))
    second = client.get(AUTH, _params("spa", "https://spa.example/cb", state="tab-2", code_challenge=CHALLENGE,
                                      code_challenge_method="S256"))
    _, query = _query(client.post(_action(second), {"username": "bob", "password": PASSWORD}))
    assert query["state"] == "tab-2"
    # The first tab's form still works, now answered by the SSO session it posts alongside.
    _, query = _query(client.post(_action(first), {"username": "bob", "password": PASSWORD}))
    assert query["state"] == "tab-1"
    assert UserSession.objects.count() == 1
