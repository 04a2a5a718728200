"""Peers of the device grant against a real ``manage.py start_dev`` (the session's ``start_dev``):
panva's openid-client v6 (the pinned release and the newest), with the user code entered in
headless Chromium at phone width and with the keyboard; python-keycloak's ``device()`` then the
poll, against Keycloak's device-grant quickstart realm imported as is; Authlib's OAuth2Session
with the device_code grant, approved and denied through the pages as a browser without
JavaScript posts them."""
import html
import json
import os
import re
import subprocess
import time
from pathlib import Path
from urllib.parse import urljoin

import pytest
import requests
from authlib.integrations.requests_client import OAuth2Session
from keycloak import KeycloakOpenID

from tests.browser import chromium  # noqa: F401 -- the module's Chromium
from tests.oidc.device.conftest import GRANT, PASSWORD, representation

ROOT = Path(__file__).resolve().parents[3]
JS = ROOT / "tests" / "js"
QUICKSTART = ROOT / "tests" / "data" / "keycloak" / "quickstarts-device-grant-realm.json"
PACKAGES = {"openid-client": "6.8.", "openid-client-newest": "6.9."}
REALM = "devicejs"


@pytest.fixture(scope="module")
def server(start_dev):
    base, import_realm_file = start_dev
    rep = representation(REALM)
    for client in rep["clients"]:
        client.setdefault("attributes", {})["oauth2.device.polling.interval"] = "1"
    import_realm_file(rep, override=True)
    import_realm_file(json.loads(QUICKSTART.read_text()), override=True)
    return base


def approve_in_chromium(browser, url, username, password):
    """A person on a phone: opens verification_uri_complete, confirms the code with Enter, signs
    in with the keyboard, says Yes (unless this user granted the client these scopes before);
    returns the page's text at the end."""
    context = browser.new_context(viewport={"width": 360, "height": 740})
    try:
        page = context.new_page()
        page.goto(url)
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        assert page.locator("#device-user-code").input_value() == url.rsplit("=", 1)[1]
        page.keyboard.press("Enter")  # the Submit button has the focus
        page.locator("#username").fill(username)
        page.locator("#password").fill(password)
        page.locator("#password").press("Enter")
        yes = page.get_by_role("button", name="Yes")
        yes.or_(page.locator("#kc-info-text")).first.wait_for()
        if yes.count():
            yes.focus()
            page.keyboard.press("Enter")
        page.wait_for_url("**/device/status")
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        return page.locator("main").inner_text()
    finally:
        context.close()


@pytest.mark.parametrize("package", PACKAGES)
def test_openid_client_device_flow(server, chromium, package):  # noqa: F811
    installed = json.loads((JS / "node_modules" / package / "package.json").read_text())["version"]
    assert installed.startswith(PACKAGES[package])
    issuer = f"{server}/realms/{REALM}"
    env = {**os.environ, "IDP_ISSUER": issuer, "IDP_CLIENT_ID": "tv", "OPENID_CLIENT": package}
    proc = subprocess.Popen(["node", "openid-client-device.mjs"], cwd=JS, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line, proc.stderr.read()
        started = json.loads(line)
        shown = approve_in_chromium(chromium, started["verification_uri_complete"], "alice", PASSWORD)
        assert "Device Login Successful" in shown
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out + err
    assert "device script: ok" in out


class PageSession:
    """The user-code page and what follows, as a browser without JavaScript posts them."""

    def __init__(self):
        self.http = requests.Session()

    def post_form(self, page, data):
        action = html.unescape(re.search(r'<form[^>]* action="([^"]+)"', page.text).group(1))
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
        return self.http.post(urljoin(page.url, action), data={"csrfmiddlewaretoken": token, **data},
                              headers={"Referer": page.url}, timeout=10)

    def approve(self, verification_uri_complete, user_code, username, password, consent="accept"):
        page = self.http.get(verification_uri_complete, timeout=10)
        login = self.post_form(page, {"device_user_code": user_code})
        assert 'name="password"' in login.text, login.text[:500]
        answer = self.post_form(login, {"username": username, "password": password})
        assert 'name="consent"' in answer.text, answer.text[:500]
        return self.post_form(answer, {"consent": consent})


def test_keycloak_quickstart_realm_with_python_keycloak(server):
    """Keycloak's quickstart realm as is: its device-client (public, interval 5 s, lifespan 600 s)."""
    oidc = KeycloakOpenID(server_url=server + "/", realm_name="device-flow-quickstart", client_id="device-client")
    started = oidc.device(scope="openid")
    assert started["expires_in"] == 600 and started["interval"] == 5
    assert re.fullmatch(r"[A-Z]{4}-[A-Z]{4}", started["user_code"])
    with pytest.raises(Exception) as pending:
        oidc.token(grant_type=GRANT, device_code=started["device_code"])
    assert "authorization_pending" in str(pending.value)
    done = PageSession().approve(started["verification_uri_complete"], started["user_code"], "alice", "password")
    assert "Device Login Successful" in done.text
    time.sleep(started["interval"])
    tokens = oidc.token(grant_type=GRANT, device_code=started["device_code"])
    assert tokens["access_token"] and tokens["id_token"] and tokens["refresh_token"]
    assert oidc.userinfo(tokens["access_token"])["preferred_username"] == "alice"
    with pytest.raises(Exception) as replay:
        oidc.token(grant_type=GRANT, device_code=started["device_code"])
    assert "invalid_grant" in str(replay.value)


def test_authlib_device_flow_approved_and_denied(server):
    issuer = f"{server}/realms/{REALM}"
    meta = requests.get(f"{issuer}/.well-known/openid-configuration", timeout=10).json()
    session = OAuth2Session("radio", token_endpoint_auth_method="none", scope="openid email")

    # Authlib has no call of its own for the device request (RFC 8628 §3.1): a form POST.
    started = session.post(meta["device_authorization_endpoint"], withhold_token=True,
                           data={"client_id": "radio", "scope": "openid email"}, timeout=10).json()
    done = PageSession().approve(started["verification_uri_complete"], started["user_code"], "alice", PASSWORD)
    assert "Device Login Successful" in done.text
    time.sleep(started["interval"])
    token = session.fetch_token(meta["token_endpoint"], grant_type=GRANT, device_code=started["device_code"])
    assert token["access_token"] and token["id_token"] and "email" in token["scope"].split()

    # A scope not granted yet brings the consent page back; this time the answer is No.
    denied = session.post(meta["device_authorization_endpoint"], withhold_token=True,
                          data={"client_id": "radio", "scope": "openid phone"}, timeout=10).json()
    page = PageSession().approve(denied["verification_uri_complete"], denied["user_code"], "alice", PASSWORD,
                                 consent="deny")
    assert "Consent denied for connecting the device." in page.text
    time.sleep(denied["interval"])
    fresh = OAuth2Session("radio", token_endpoint_auth_method="none")
    with pytest.raises(Exception) as refused:
        fresh.fetch_token(meta["token_endpoint"], grant_type=GRANT, device_code=denied["device_code"])
    assert "access_denied" in str(refused.value)
