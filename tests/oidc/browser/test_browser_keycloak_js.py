"""keycloak-js 26 (tests/js, from the npm registry) with its default init options, in headless
Chromium, against the live server: ``login-required`` signs in through our login page (response
mode fragment, PKCE, the check-session iframe and the third-party-cookie probe), ``updateToken``,
``loadUserInfo`` and ``loadUserProfile`` (the Account REST API at ``/realms/<realm>/account``,
its preflight answered there) work; ``check-sso`` with a silent check-sso page finds the session after a
reload; ``logout`` in one tab is noticed by the check-session iframe of another (onAuthLogout);
the implicit and hybrid flows for a client with implicitFlowEnabled; a page of a foreign origin
cannot frame the check-session iframe.

The application is served by a small HTTP server on another port of 127.0.0.1: another origin
than the server's, registered as the client's redirect URI and web origin (same site, so the
browser's third-party cookie policy does not decide the outcome).

keycloak-js is the newest release (26.2.4 as ``npm view keycloak-js version`` says today; keycloak-js
now follows its own releases, not the server's), so tests/js pins it alone, without an alias of a
newer one as for the admin client."""
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests
from playwright.sync_api import sync_playwright

from realms.representation.services import create_realm
from realms.users.accounts import create_user
from tests.browser import CHROMIUM_ARGS
from tests.oidc.browser.conftest import PASSWORD, make_client

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

KEYCLOAK_JS = Path(__file__).resolve().parents[2] / "js" / "node_modules" / "keycloak-js" / "lib" / "keycloak.js"
CALLBACKS = ["onReady", "onAuthSuccess", "onAuthError", "onAuthRefreshSuccess", "onAuthRefreshError",
             "onAuthLogout", "onTokenExpired"]

APP_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>app</title></head><body>
<script type="module">
  import Keycloak from "/keycloak.js";
  window.events = [];
  const query = new URLSearchParams(location.search);
  const kc = new Keycloak({url: "%(idp)s", realm: "acme", clientId: query.get("client") || "spa"});
  for (const name of %(callbacks)s) {
    kc[name] = () => window.events.push(name);
  }
  window.kc = kc;
  // Only what an application must say; every other option keeps keycloak-js's default.
  const options = query.get("onLoad") === "check-sso"
    ? {onLoad: "check-sso", silentCheckSsoRedirectUri: location.origin + "/silent-check-sso.html"}
    : {onLoad: "login-required"};
  if (query.get("flow")) {
    options.flow = query.get("flow");
  }
  kc.init(options).then((authenticated) => { window.initResult = authenticated; },
                        (error) => { window.initError = String(error && error.message || error); });
</script></body></html>"""

# Served from http://localhost:<port>: not a web origin of any client.
FOREIGN_FRAME = """<!doctype html><html><body>
<iframe src="%(idp)s/realms/acme/protocol/openid-connect/login-status-iframe.html"></iframe>
</body></html>"""

SILENT_CHECK_SSO = """<!doctype html><html><body>
<script>parent.postMessage(location.href, location.origin);</script>
</body></html>"""


@pytest.fixture
def idp(live_server):
    return live_server.url.replace("localhost", "127.0.0.1")


@pytest.fixture
def app(idp):
    pages = {
        "/": ("text/html", (APP_PAGE % {"idp": idp, "callbacks": CALLBACKS}).encode()),
        "/silent-check-sso.html": ("text/html", SILENT_CHECK_SSO.encode()),
        "/foreign-frame.html": ("text/html", (FOREIGN_FRAME % {"idp": idp}).encode()),
        "/keycloak.js": ("text/javascript", KEYCLOAK_JS.read_bytes()),
    }

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            content_type, body = pages.get(self.path.split("?")[0].split("#")[0], ("text/plain", b""))
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def setup(transactional_db, app):
    realm = create_realm("acme")
    make_client(realm, "spa", public_client=True, redirect_uris=[f"{app}/*"], web_origins=["+"],
                attributes={"post.logout.redirect.uris": "+"})
    make_client(realm, "spa-implicit", public_client=True, implicit_flow_enabled=True, redirect_uris=[f"{app}/*"],
                web_origins=["+"])
    create_user(realm, "bob", password=PASSWORD, email="bob@example.com", first_name="Bob")
    return realm


def _ready(page):
    page.wait_for_function("window.initResult !== undefined || window.initError !== undefined", timeout=20000)
    assert page.evaluate("window.initError") is None, page.evaluate("window.initError")
    return page.evaluate("window.initResult")


def test_keycloak_js_with_its_defaults(setup, idp, app):
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context()
            page = context.new_page()
            page.goto(app + "/")
            # login-required: straight to our login page, in the fragment response mode.
            page.wait_for_url(f"{idp}/realms/acme/protocol/openid-connect/auth?**", timeout=20000)
            assert "response_mode=fragment" in page.url
            page.get_by_label("Username or email").fill("bob")
            page.get_by_label("Password").fill(PASSWORD)
            page.get_by_role("button", name="Sign in").click()
            page.wait_for_url(f"{app}/**", timeout=20000)
            assert _ready(page) is True
            assert page.evaluate("kc.tokenParsed.preferred_username") == "bob"
            session_id = page.evaluate("kc.sessionId")
            assert session_id and page.evaluate("kc.idTokenParsed.sid") == session_id
            assert page.evaluate("window.events").count("onAuthSuccess") == 1

            # updateToken(-1) forces a refresh; loadUserInfo calls userinfo across origins (CORS).
            assert page.evaluate("kc.updateToken(-1)") is True
            assert "onAuthRefreshSuccess" in page.evaluate("window.events")
            assert page.evaluate("kc.loadUserInfo().then((info) => info.email)") == "bob@example.com"
            # loadUserProfile asks /realms/acme/account (no slash) with a bearer token: a preflight
            # the browser would refuse if it were redirected, then the account JSON.
            profile = page.evaluate("kc.loadUserProfile()")
            assert {k: profile[k] for k in ("username", "email", "firstName", "emailVerified")} == {
                "username": "bob", "email": "bob@example.com", "firstName": "Bob", "emailVerified": False}
            assert page.evaluate("kc.profile.username") == "bob"
            preflight = requests.options(f"{idp}/realms/acme/account", allow_redirects=False, timeout=10, headers={
                "Origin": app, "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "authorization"})
            assert preflight.status_code in (200, 204) and "Location" not in preflight.headers
            assert preflight.headers["Access-Control-Allow-Origin"] == app

            # check-sso after a reload: the iframe reports a change (no session state yet), the
            # silent check-sso page gets a code with prompt=none, no login page is shown.
            page.goto(app + "/?onLoad=check-sso")
            assert _ready(page) is True
            assert page.evaluate("kc.sessionId") == session_id
            assert page.url.startswith(app + "/?onLoad=check-sso")

            # Another tab signs out with keycloak-js; the first tab's iframe notices within its
            # 5 s polling interval.
            other = context.new_page()
            other.goto(app + "/?onLoad=check-sso")
            assert _ready(other) is True
            other.evaluate("kc.logout()")
            other.wait_for_url(f"{app}/?onLoad=check-sso", timeout=20000)
            assert _ready(other) is False
            page.wait_for_function("window.events.includes('onAuthLogout')", timeout=20000)
            assert page.evaluate("kc.authenticated") is False and page.evaluate("kc.token") is None
        finally:
            browser.close()


def test_iframe_init_and_silent_check_sso_without_a_session(setup, idp, app):
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(app + "/?onLoad=check-sso")
            assert _ready(page) is False  # no session: answered silently, no login page
            assert page.url == app + "/?onLoad=check-sso"
        finally:
            browser.close()


def test_implicit_and_hybrid_flows_and_foreign_framing(setup, idp, app):
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(app + "/?client=spa-implicit&flow=implicit")
            page.wait_for_url(f"{idp}/realms/acme/protocol/openid-connect/auth?**", timeout=20000)
            assert "response_type=id_token+token" in page.url or "response_type=id_token%20token" in page.url
            page.get_by_label("Username or email").fill("bob")
            page.get_by_label("Password").fill(PASSWORD)
            page.get_by_role("button", name="Sign in").click()
            page.wait_for_url(f"{app}/**", timeout=20000)
            assert _ready(page) is True  # keycloak-js checked the ID token's nonce
            assert page.evaluate("kc.tokenParsed.preferred_username") == "bob"
            assert page.evaluate("kc.refreshToken") is None

            # Hybrid: tokens from the fragment, then the code redeemed with PKCE (SSO: no form).
            page.goto(app + "/?client=spa-implicit&flow=hybrid")
            assert _ready(page) is True
            assert page.evaluate("kc.refreshToken") and page.evaluate("kc.idTokenParsed.preferred_username") == "bob"

            # A page of a foreign origin cannot frame the check-session iframe.
            foreign = app.replace("127.0.0.1", "localhost")
            blocked = []
            page.on("console", lambda message: blocked.append(message.text))
            page.goto(foreign + "/foreign-frame.html")
            page.wait_for_timeout(1000)
            assert page.frames[1].url.startswith("chrome-error://")
            assert any("violates the following Content Security Policy directive: \"frame-ancestors" in text
                       for text in blocked)
        finally:
            browser.close()

