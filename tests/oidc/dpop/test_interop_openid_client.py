"""panva's openid-client v6 (the pinned release and the newest) with DPoP against the shared
``start_dev`` server (its own process, SQLite): clients that require DPoP and a server nonce;
client credentials, the code flow, a refresh and userinfo (tests/js/openid-client-dpop.mjs)."""
import json
import os
import subprocess
from pathlib import Path

import pytest

from oidc import dpop

ROOT = Path(__file__).resolve().parents[3]
JS = ROOT / "tests" / "js"
PACKAGES = {"openid-client": "6.8.", "openid-client-newest": "6.9."}
SECRET = "dpop-secret-" + "d" * 24
PASSWORD = "dpop-password-1"
CALLBACK = "http://127.0.0.1:9/callback"
STRICT = {dpop.REQUIRE_DPOP: "true", dpop.REQUIRE_NONCE: "true"}


def representation(name):
    return {
        "realm": name, "enabled": True,
        "clients": [
            {"clientId": "service", "secret": SECRET, "serviceAccountsEnabled": True, "standardFlowEnabled": False,
             "attributes": STRICT},
            {"clientId": "spa", "publicClient": True, "redirectUris": [CALLBACK],
             "attributes": {**STRICT, "pkce.code.challenge.method": "S256"}},
        ],
        "users": [{"username": "alice", "enabled": True, "email": "alice@example.org", "emailVerified": True,
                   "firstName": "Alice", "lastName": "Liddell", "realmRoles": [f"default-roles-{name}"],
                   "credentials": [{"type": "password", "value": PASSWORD, "temporary": False}]}],
    }


@pytest.mark.parametrize("package", PACKAGES)
def test_openid_client_dpop_with_a_server_nonce(start_dev, package):
    installed = JS / "node_modules" / package / "package.json"
    assert json.loads(installed.read_text())["version"].startswith(PACKAGES[package])
    base, import_realm = start_dev
    name = "dpopjs-" + package.rsplit("-", 1)[-1]
    import_realm(representation(name))
    done = subprocess.run(["node", "openid-client-dpop.mjs"], cwd=JS, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "OPENID_CLIENT": package, "IDP_ISSUER": f"{base}/realms/{name}",
                               "IDP_CLIENT_ID": "service", "IDP_CLIENT_SECRET": SECRET, "IDP_PUBLIC_CLIENT_ID": "spa",
                               "IDP_REDIRECT_URI": CALLBACK, "IDP_USERNAME": "alice", "IDP_PASSWORD": PASSWORD})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "dpop script: ok" in done.stdout
