"""In a real headless Chromium: the upstream provider is another site (``localhost``, we are
``127.0.0.1``), so its auto-posted Response reaches our broker endpoint without our SameSite=Lax
AUTH_SESSION_ID cookie. Our endpoint posts the same fields again from its own page, the browser
sends the cookie with that same-origin POST, and the sign-in completes at the client."""
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from playwright.sync_api import sync_playwright

from tests.browser import CHROMIUM_ARGS, open_page

from ...oidc.browser.conftest import make_client
from .test_end_to_end import ALIAS, linked, live_idp  # noqa: F401 (fixtures)
from .upstream import UpstreamIdp

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def upstream(tmp_path_factory):
    server = UpstreamIdp(tmp_path_factory.mktemp("upstream-localhost"), host="localhost")
    yield server
    server.stop()


@pytest.fixture
def app(realm, base):
    return make_client(realm, "web-app", redirect_uris=[f"{base}/app/cb"])


def test_the_providers_cross_site_post_completes_the_sign_in(live_idp, base, realm):  # noqa: F811
    linked(realm, live_idp())
    endpoint = f"{base}/realms/acme/broker/{ALIAS}/endpoint"
    posts = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.on("request", lambda request: posts.append(request.all_headers().get("cookie", ""))
                    if request.method == "POST" and request.url == endpoint else None)
            open_page(page, f"{base}/realms/acme/protocol/openid-connect/auth?client_id=web-app&response_type=code"
                      f"&scope=openid&state=st&redirect_uri={base}/app/cb&kc_idp_hint={ALIAS}", wait_until="commit")
            page.wait_for_url(f"{base}/app/cb?**", timeout=15000)
            location = page.url
        finally:
            browser.close()
    assert len(posts) == 2, posts  # the provider's POST, then ours from our own page
    assert "AUTH_SESSION_ID" not in posts[0] and "AUTH_SESSION_ID" in posts[1]
    code = parse_qs(urlsplit(location).query)["code"][0]
    answer = requests.post(f"{base}/realms/acme/protocol/openid-connect/token", data={
        "grant_type": "authorization_code", "code": code, "redirect_uri": f"{base}/app/cb", "client_id": "web-app",
        "client_secret": "secret-of-web-app"}, timeout=10)
    assert answer.status_code == 200 and answer.json()["id_token"]
