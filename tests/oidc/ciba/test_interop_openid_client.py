"""panva's openid-client v6 (the pinned release and the newest) runs CIBA in poll mode against a
real ``manage.py start_dev`` of this module's own (it needs IDP_CIBA_HTTP_AUTH_CHANNEL_URI set):
a loopback authentication channel owned by the test receives each request and calls the
server's callback over HTTP with the request's bearer token."""
import json
import os
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from tests.idp.test_modes import base_env, free_port, manage, stop, wait_for
from tests.oidc.ciba.conftest import SECRET, Recorder, representation

ROOT = Path(__file__).resolve().parents[3]
JS = ROOT / "tests" / "js"
PACKAGES = {"openid-client": "6.8.", "openid-client-newest": "6.9."}
REALM = "cibajs"


@pytest.fixture(scope="module")
def ciba_server(tmp_path_factory):
    """(issuer, channel recorder) of a start_dev whose authentication channel is the recorder."""
    channel = Recorder()
    var = tmp_path_factory.mktemp("ciba-start-dev")
    env = base_env(DJANGO_SETTINGS_MODULE="idp.settings.dev", IDP_VAR_DIR=str(var),
                   IDP_CIBA_HTTP_AUTH_CHANNEL_URI=channel.url + "ciba")
    http, mgmt = free_port(), free_port()
    issuer = f"http://127.0.0.1:{http}/realms/{REALM}"

    def call_back(record):
        # The authentication device's answer, a moment after the channel accepted the request.
        time.sleep(0.3)
        status = "UNAUTHORIZED" if record["json"].get("binding_message") == "DENY" else "SUCCEED"
        request = urllib.request.Request(
            f"{issuer}/protocol/openid-connect/ext/ciba/auth/callback", data=json.dumps({"status": status}).encode(),
            headers={"Content-Type": "application/json", "Authorization": record["headers"]["Authorization"]})
        with urllib.request.urlopen(request, timeout=10) as answer:
            record["callback_status"] = answer.status

    channel.then = call_back
    proc = manage("start_dev", "--http-port", str(http), "--management-port", str(mgmt), env=env)
    try:
        wait_for(f"http://127.0.0.1:{mgmt}/health/ready", proc=proc)
        realm_file = var / f"{REALM}.json"
        realm_file.write_text(json.dumps(representation(REALM, attributes={"cibaInterval": "1", "cibaExpiresIn": "60"})))
        imported = manage("import_realm", str(realm_file), env=env)
        out, _ = imported.communicate(timeout=120)
        assert imported.returncode == 0, out
        yield issuer, channel
    finally:
        stop(proc)
        channel.close()
        print(proc.stdout.read())


@pytest.mark.parametrize("package", PACKAGES)
def test_openid_client_ciba_poll(ciba_server, package):
    issuer, channel = ciba_server
    installed = JS / "node_modules" / package / "package.json"
    assert json.loads(installed.read_text())["version"].startswith(PACKAGES[package])
    sent = len(channel.requests)
    done = subprocess.run(["node", "openid-client-ciba.mjs"], cwd=JS, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "IDP_ISSUER": issuer, "IDP_CLIENT_ID": "ciba-app",
                               "IDP_CLIENT_SECRET": SECRET, "OPENID_CLIENT": package})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ciba script: ok" in done.stdout
    # The channel got both requests the script made it, with Keycloak's body, and its callbacks were taken.
    made = channel.requests[sent:]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not all("callback_status" in r for r in made):
        time.sleep(0.05)  # the last callback's answer may still be on its way back to the channel
    assert [r["json"]["binding_message"] for r in made] == ["JS-OK", "DENY"]
    assert all(r["json"]["login_hint"] == "alice" and r["callback_status"] == 200 for r in made)
