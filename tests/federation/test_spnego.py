"""SPNEGO sign-in (the browser flow's ``auth-spnego`` step) against a real MIT KDC and the live
server: requests-gssapi and headless Chromium holding a ticket sign in without a form; a browser
without a ticket gets the 401 Negotiate challenge and then the login form; a token the keytab
cannot accept is refused and recorded."""
import re
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from playwright.sync_api import sync_playwright
from requests_gssapi import OPTIONAL, HTTPSPNEGOAuth

from realms.models import AuthenticationExecution, Component, Event, User
from realms.representation.services import create_realm
from realms.signin.flows import ALTERNATIVE
from tests.browser import CHROMIUM_ARGS, open_page
from tests.oidc.browser.conftest import make_client

from .conftest import ALICE_PASSWORD, add_kerberos_component
from .kdc import REALM, SERVICE_HOST

pytestmark = [pytest.mark.django_db(transaction=True)]



def spnego_on(realm):
    """The realm's stored browser flow with the Kerberos step switched on (as creating a Kerberos
    provider does in Keycloak)."""
    for execution in AuthenticationExecution.objects.filter(realm=realm, flow__alias="browser",
                                                            authenticator="auth-spnego"):
        execution.requirement = ALTERNATIVE
        execution.save()


@pytest.fixture
def base(live_server):
    # The service principal is HTTP/localhost: browsers and requests-gssapi derive it from this host.
    assert urlsplit(live_server.url).hostname == SERVICE_HOST
    return live_server.url


@pytest.fixture
def realm(transactional_db, base, kdc):
    realm = create_realm("corp", events_enabled=True)  # the Kerberos provider switches SPNEGO on
    make_client(realm, "web-app", redirect_uris=[f"{base}/web-app/cb"])
    add_kerberos_component(realm, kdc)
    return realm


@pytest.fixture
def ticket(kdc, tmp_path, monkeypatch):
    """A ticket cache holding alice's TGT, as a desktop sign-in leaves it."""
    ccache = kdc.kinit("alice", ALICE_PASSWORD, tmp_path / "ccache")
    monkeypatch.setenv("KRB5CCNAME", ccache)
    return ccache


def auth_url(base, state="st"):
    return (f"{base}/realms/corp/protocol/openid-connect/auth?client_id=web-app"
            f"&redirect_uri={base}/web-app/cb&response_type=code&scope=openid&state={state}")


def test_requests_gssapi_signs_in_with_a_ticket(realm, base, ticket):
    answer = requests.get(auth_url(base), auth=HTTPSPNEGOAuth(mutual_authentication=OPTIONAL),
                          allow_redirects=False, timeout=10)
    assert answer.status_code == 302, answer.text
    query = parse_qs(urlsplit(answer.headers["Location"]).query)
    assert query["state"] == ["st"] and query["code"]
    alice = User.objects.get(realm=realm, username="alice")
    assert alice.federation_link.provider_id == "kerberos"
    assert alice.attributes["KERBEROS_PRINCIPAL"] == [f"alice@{REALM}"]
    login = Event.objects.get(realm=realm, type="LOGIN")
    assert login.user_id == alice.pk


def test_without_a_ticket_the_challenge_falls_back_to_the_form(realm, base):
    http = requests.Session()
    challenge = http.get(auth_url(base), timeout=10)
    assert challenge.status_code == 401
    assert challenge.headers["WWW-Authenticate"] == "Negotiate"
    action = re.search(r'<form method="post" action="([^"]+)" id="kc-spnego-form"', challenge.text).group(1)
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', challenge.text).group(1)
    form = http.post(base + action.replace("&amp;", "&"), data={"csrfmiddlewaretoken": csrf},
                     headers={"Referer": challenge.url}, timeout=10)
    assert form.status_code == 200
    assert 'id="kc-form-login"' in form.text and "WWW-Authenticate" not in form.headers


def test_a_token_the_keytab_cannot_accept_is_refused(realm, base):
    answer = requests.get(auth_url(base), headers={"Authorization": "Negotiate bm90IGEgdG9rZW4="}, timeout=10)
    assert answer.status_code == 401 and "Invalid username or password." in answer.text
    assert Event.objects.get(realm=realm, type="LOGIN_ERROR").error == "invalid_user_credentials"
    assert not User.objects.filter(realm=realm).exists()


def test_a_principal_of_another_kerberos_realm_is_refused(realm, base, kdc, ticket):
    # The provider serves OTHER.TEST: alice@KERBEROS.TEST's valid ticket maps to no user.
    component = Component.objects.get(realm=realm, provider_type=Component.USER_STORAGE)
    component.config["kerberosRealm"] = ["OTHER.TEST"]
    component.save()
    answer = requests.get(auth_url(base), auth=HTTPSPNEGOAuth(mutual_authentication=OPTIONAL),
                          allow_redirects=False, timeout=10)
    assert answer.status_code == 401
    assert Event.objects.get(realm=realm, type="LOGIN_ERROR").error == "invalid_user_credentials"
    assert not User.objects.filter(realm=realm).exists()


def test_without_a_kerberos_provider_the_step_stands_aside(transactional_db, base, kdc, ticket):
    realm = create_realm("plain")
    spnego_on(realm)
    make_client(realm, "web-app", redirect_uris=[f"{base}/web-app/cb"])
    answer = requests.get(auth_url(base).replace("/corp/", "/plain/"),
                          auth=HTTPSPNEGOAuth(mutual_authentication=OPTIONAL), allow_redirects=False, timeout=10)
    assert answer.status_code == 200 and 'id="kc-form-login"' in answer.text


def _warm_up(page, base):
    # The first challenge page posts itself back (no token yet); wait until that has happened,
    # or until a Chromium that needed no warm-up has signed in.
    open_page(page, auth_url(base, "st-warm-up"))
    page.wait_for_url(lambda url: "/login-actions/" in url or "/web-app/cb" in url, timeout=10000)


def _chromium(pw, kdc, ccache, profile):
    """Headless Chromium with a Kerberos ticket cache, allowed to answer this host's Negotiate
    challenges. A persistent profile: Chromium never uses ambient credentials in the incognito-like
    contexts Playwright makes otherwise. A fresh Chromium process answers its first challenge
    without a token (it loads the GSSAPI library then): one navigation warms it up."""
    browser = pw.chromium.launch_persistent_context(
        str(profile), executable_path="/usr/bin/chromium", headless=True,
        args=CHROMIUM_ARGS + [f"--auth-server-allowlist={SERVICE_HOST}", "--disable-auth-negotiate-cname-lookup"],
        env={"KRB5CCNAME": ccache, "KRB5_CONFIG": str(kdc.krb5_conf), "HOME": str(profile)})
    return browser


@pytest.mark.browser
def test_chromium_signs_in_by_spnego_with_a_ticket(realm, base, kdc, ticket, tmp_path):
    with sync_playwright() as pw:
        browser = _chromium(pw, kdc, ticket, tmp_path / "profile")
        try:
            page = browser.new_page()
            _warm_up(page, base)
            open_page(page, auth_url(base, "st-chromium"))
            page.wait_for_url(f"{base}/web-app/cb?**", timeout=10000)
            assert parse_qs(urlsplit(page.url).query)["state"] == ["st-chromium"]
        finally:
            browser.close()
    alice = User.objects.get(realm=realm, username="alice")
    assert set(Event.objects.filter(realm=realm, type="LOGIN").values_list("user_id", flat=True)) == {alice.pk}


@pytest.mark.browser
def test_chromium_without_a_ticket_gets_the_form_and_signs_in_with_the_kerberos_password(realm, base, kdc, tmp_path):
    with sync_playwright() as pw:
        browser = _chromium(pw, kdc, f"FILE:{tmp_path / 'empty-ccache'}", tmp_path / "profile")
        try:
            page = browser.new_page()
            _warm_up(page, base)
            open_page(page, auth_url(base, "st-form"))
            page.locator("#kc-form-login").wait_for(timeout=10000)
            page.get_by_label("Username").fill("alice")
            page.get_by_label("Password").fill(ALICE_PASSWORD)
            page.get_by_role("button", name="Sign in").click()
            page.wait_for_url(f"{base}/web-app/cb?**", timeout=10000)
            assert parse_qs(urlsplit(page.url).query)["state"] == ["st-form"]
        finally:
            browser.close()
    assert Event.objects.filter(realm=realm, type="LOGIN").count() == 1
