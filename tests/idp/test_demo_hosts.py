"""Dev mode's demo link works whichever loopback name the browser opened the server at: start_dev
registers the demo callback at each (redirect URIs stay matched exactly), and the callback page's
tokens wrap inside their boxes at a desktop's and a phone's width."""
import html
import re

import pytest
import requests

from idp.management.commands.start_dev import server_bases
from realms.representation.bootstrap import ensure_demo_callback, ensure_demo_realm
from tests.browser import CHROMIUM_ARGS

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_loopback_server_is_reached_by_name_and_by_address():
    assert server_bases("127.0.0.1", 8080) == ["http://localhost:8080", "http://127.0.0.1:8080"]
    assert server_bases("::1", 8080) == ["http://localhost:8080", "http://[::1]:8080"]
    assert server_bases("192.0.2.5", 8080) == ["http://192.0.2.5:8080"]


@pytest.fixture
def demo(settings, live_server, fresh_caches):
    settings.IDP_DEV_MODE = True
    port = live_server.url.rsplit(":", 1)[1]
    return port, ensure_demo_realm()


def sign_in(base, password):
    http = requests.Session()
    login = http.get(f"{base}/demo/", timeout=10)
    if 'id="kc-form-login"' not in login.text:
        return login
    action = html.unescape(re.search(r'<form method="post" action="([^"]+)" id="kc-form-login"', login.text).group(1))
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text).group(1)
    return http.post(base + action, data={"csrfmiddlewaretoken": csrf, "username": "alice", "password": password},
                     headers={"Referer": login.url}, timeout=10)


def test_the_demo_link_opened_at_127_0_0_1_signs_in(demo):
    port, password = demo
    ensure_demo_callback(f"http://localhost:{port}")
    # Registered at localhost only (before): 127.0.0.1's callback is not a registered redirect URI.
    refused = sign_in(f"http://127.0.0.1:{port}", password)
    assert refused.status_code == 400 and "Invalid parameter: redirect_uri" in refused.text
    for base in server_bases("127.0.0.1", port):
        ensure_demo_callback(base)
    for base in server_bases("127.0.0.1", port):
        page = sign_in(base, password)
        assert page.url.startswith(f"{base}/demo/callback?") and page.status_code == 200, (base, page.text[:300])
        assert '<pre id="demo-id-token">' in page.text


@pytest.mark.browser
def test_the_callback_page_fits_a_desktop_and_a_phone(demo):
    from playwright.sync_api import sync_playwright

    port, password = demo
    base = f"http://127.0.0.1:{port}"
    ensure_demo_callback(base)
    widths = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS)
        try:
            for width in (1280, 390):
                page = browser.new_page(viewport={"width": width, "height": 900})
                page.goto(f"{base}/demo/")
                page.fill("#username", "alice")
                page.fill("#password", password)
                page.press("#password", "Enter")
                page.wait_for_selector("#demo-access-token")
                widths[width] = page.evaluate("() => [document.documentElement.scrollWidth, "
                                              "Math.max(...Array.from(document.querySelectorAll('pre'))"
                                              ".map((p) => p.getBoundingClientRect().right))]")
                page.close()
        finally:
            browser.close()
    for width, (page_width, rightmost_box) in widths.items():
        assert page_width <= width and rightmost_box <= width, (width, page_width, rightmost_box)
