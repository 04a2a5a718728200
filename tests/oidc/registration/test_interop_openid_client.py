"""panva's openid-client v6 (the pinned release and the newest) registers a client with
``dynamicClientRegistration`` against the session's ``manage.py start_dev``, with an initial
access token made through the Admin API, and the registered client then gets tokens."""
import json
import os
import subprocess
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
JS = ROOT / "tests" / "js"
PACKAGES = {"openid-client": "6.8.", "openid-client-newest": "6.9."}
REALM = "dcrjs"


def _post(url, data=None, body=None, bearer=None):
    headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
    if body is not None:
        raw, headers["Content-Type"] = json.dumps(body).encode(), "application/json"
    else:
        raw = urllib.parse.urlencode(data).encode()
    with urllib.request.urlopen(urllib.request.Request(url, data=raw, headers=headers), timeout=30) as answer:
        return json.loads(answer.read())


@pytest.fixture(scope="module")
def issuer(start_dev):
    base, import_realm = start_dev
    import_realm({"realm": REALM, "enabled": True})
    return base, f"{base}/realms/{REALM}"


@pytest.mark.parametrize("package", PACKAGES)
def test_openid_client_dynamic_registration(issuer, package):
    base, realm_issuer = issuer
    installed = JS / "node_modules" / package / "package.json"
    assert json.loads(installed.read_text())["version"].startswith(PACKAGES[package])
    admin = _post(f"{base}/realms/master/protocol/openid-connect/token", {
        "grant_type": "password", "client_id": "admin-cli", "username": "boot", "password": "boot-pass-1"})
    made = _post(f"{base}/admin/realms/{REALM}/clients-initial-access", body={"count": 1, "expiration": 300},
                 bearer=admin["access_token"])
    done = subprocess.run(["node", "openid-client-registration.mjs"], cwd=JS, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "IDP_ISSUER": realm_issuer,
                                            "IDP_INITIAL_ACCESS_TOKEN": made["token"], "OPENID_CLIENT": package})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "registration script: ok" in done.stdout
