"""One browser session in a real headless Chromium: sign in to an OIDC client through the login
page, then open a SAML service provider (pysaml2) in the same browser: answered from the SSO
session without a form. Logging out at the SAML SP ends the SSO session: the OIDC client's
front-channel logout URL is loaded on the way, and its refresh token fails with invalid_grant."""
import re
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from playwright.sync_api import sync_playwright
from saml2 import BINDING_HTTP_POST, BINDING_HTTP_REDIRECT

from realms.models import Client, Event, UserSession
from realms.representation.services import add_default_client_scopes
from tests.browser import CHROMIUM_ARGS, open_page

from .sp import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SECRET = "web-app-secret-" + "z" * 20


def test_oidc_then_saml_without_form_then_saml_logout_ends_oidc(sp_factory, user, base, realm):
    web = Client(realm=realm, client_id="web-app", redirect_uris=[f"{base}/web-app/cb"],
                 attributes={"frontchannel.logout.url": f"{base}/web-app/fc"})
    web.set_secret(SECRET)
    web.save()
    add_default_client_scopes(web)
    _, sp = sp_factory()
    token_url = f"{base}/realms/acme/protocol/openid-connect/token"

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(f"{base}/realms/acme/protocol/openid-connect/auth?client_id=web-app&response_type=code"
                      f"&scope=openid&state=s1&redirect_uri={base}/web-app/cb")
            page.get_by_label("Username or email").fill("alice")
            page.get_by_label("Password").fill(PASSWORD)
            page.get_by_role("button", name="Sign in").click()
            page.wait_for_url(f"{base}/web-app/cb?**", timeout=10000)
            code = parse_qs(urlsplit(page.url).query)["code"][0]
            tokens = requests.post(token_url, data={"grant_type": "authorization_code", "code": code,
                                                    "redirect_uri": f"{base}/web-app/cb"},
                                   auth=("web-app", SECRET), timeout=10).json()
            assert "refresh_token" in tokens

            # The SAML SP: the IdP answers from the SSO session and the browser posts the
            # Response to the ACS URL; no login form on the way.
            req_id, info = sp.prepare_for_authenticate(entityid=f"{base}/realms/acme", binding=BINDING_HTTP_REDIRECT)
            seen = []
            page.on("request", lambda request: seen.append(request.url))
            with page.expect_request(f"{base}/sp/acs") as acs_request:
                # The answer page posts itself on load: wait only for the navigation to start.
                open_page(page, dict(info["headers"])["Location"], wait_until="commit")
            assert not any("login-actions" in url for url in seen)
            saml_response = parse_qs(acs_request.value.post_data)["SAMLResponse"][0]
            authn = sp.parse_authn_request_response(saml_response, BINDING_HTTP_POST, outstanding={req_id: "/"})
            assert authn.name_id.text == "alice"

            # (The database is not queried in here: Playwright's sync API runs an event loop.)
            # SLO from the SAML SP: the OIDC client's front-channel URL loads in an iframe, then
            # the LogoutResponse goes back to the SP.
            binding, info = sp.global_logout(authn.name_id)[f"{base}/realms/acme"]
            assert binding == BINDING_HTTP_REDIRECT
            with page.expect_request(re.compile(re.escape(f"{base}/sp/slo?SAMLResponse="))) as slo:
                open_page(page, dict(info["headers"])["Location"], wait_until="commit")
            assert sp.parse_logout_request_response(parse_qs(urlsplit(slo.value.url).query)["SAMLResponse"][0],
                                                    BINDING_HTTP_REDIRECT).status_ok()
            assert any(url.startswith(f"{base}/web-app/fc?iss=") for url in seen)
        finally:
            browser.close()

    refused = requests.post(token_url, data={"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]},
                            auth=("web-app", SECRET), timeout=10)
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_grant"
    assert not UserSession.objects.exists()
    assert list(Event.objects.filter(type__in=["LOGIN", "LOGOUT"]).order_by("time")
                .values_list("type", "client_id")) == [("LOGIN", "web-app"), ("LOGIN", sp.config.entityid),
                                                      ("LOGOUT", sp.config.entityid)]
