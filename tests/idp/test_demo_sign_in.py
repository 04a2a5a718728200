"""Dev mode's demo sign-in: /demo/ starts a PKCE sign-in for the demo client and /demo/callback,
its registered redirect URI, exchanges the code and shows the exchange and the tokens."""
import html
import json
import re

import pytest
import requests

from realms.representation.bootstrap import ensure_demo_callback, ensure_demo_realm

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def demo(settings, live_server, fresh_caches):
    settings.IDP_DEV_MODE = True
    password = ensure_demo_realm()
    callback = ensure_demo_callback(live_server.url)
    return live_server.url, password, callback


def test_demo_sign_in_ends_on_a_callback_that_shows_the_code_exchange_and_tokens(demo):
    base, password, callback = demo
    assert callback == f"{base}/demo/callback"
    http = requests.Session()
    login = http.get(f"{base}/demo/", timeout=10)
    assert login.status_code == 200 and 'id="kc-form-login"' in login.text
    action = html.unescape(re.search(r'<form method="post" action="([^"]+)" id="kc-form-login"', login.text).group(1))
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text).group(1)
    page = http.post(base + action, data={"csrfmiddlewaretoken": csrf, "username": "alice", "password": password},
                     headers={"Referer": login.url}, timeout=10)
    assert page.url.startswith(callback + "?") and page.status_code == 200
    request_shown = html.unescape(re.search(r'<pre id="demo-request">(.*?)</pre>', page.text, re.S).group(1))
    assert "grant_type=authorization_code" in request_shown and "code_verifier=" in request_shown
    answer = json.loads(html.unescape(re.search(r'<pre id="demo-response">(.*?)</pre>', page.text, re.S).group(1)))
    assert answer["token_type"] == "Bearer" and answer["id_token"]
    claims = json.loads(html.unescape(re.search(r'<pre id="demo-id-token">(.*?)</pre>', page.text, re.S).group(1)))
    assert claims["preferred_username"] == "alice" and claims["azp"] == "demo-app"


def test_a_callback_without_its_sign_in_is_refused(demo):
    base, _, callback = demo
    page = requests.get(f"{callback}?code=forged&state=forged", timeout=10)
    assert page.status_code == 400 and "state does not match" in page.text


def test_the_demo_pages_exist_only_in_dev_mode(demo, settings):
    base, _, _ = demo
    settings.IDP_DEV_MODE = False
    assert requests.get(f"{base}/demo/", allow_redirects=False, timeout=10).status_code == 404
