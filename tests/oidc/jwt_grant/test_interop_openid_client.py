"""panva's openid-client v6 (the pinned release and the newest) redeems a JWT authorization grant
with ``genericGrantRequest`` against the shared ``start_dev`` server (its own process, SQLite): the
assertion is signed in the node script with jose; this test serves the identity provider's JWKS
on loopback (dev mode lets the server call http on loopback)."""
import json
import os
import subprocess
from pathlib import Path

import pytest

from .conftest import IDP_ISSUER, SECRET, SUBJECT, JwksServer, new_key, realm_representation

ROOT = Path(__file__).resolve().parents[3]
JS = ROOT / "tests" / "js"
PACKAGES = {"openid-client": "6.8.", "openid-client-newest": "6.9."}


@pytest.fixture
def jwks():
    # One per realm: the server caches a JWKS per URL.
    server = JwksServer()
    yield server
    server.close()


@pytest.mark.parametrize("package", PACKAGES)
def test_openid_client_jwt_bearer(start_dev, jwks, package):
    installed = JS / "node_modules" / package / "package.json"
    assert json.loads(installed.read_text())["version"].startswith(PACKAGES[package])
    base, import_realm = start_dev
    name = "jwtjs-" + package.rsplit("-", 1)[-1]
    key = new_key()
    jwks.keys.append(key)
    import_realm(realm_representation(name, jwks.url))
    done = subprocess.run(["node", "openid-client-jwt-grant.mjs"], cwd=JS, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "OPENID_CLIENT": package,
                                            "IDP_ISSUER": f"{base}/realms/{name}", "IDP_CLIENT_ID": "agent",
                                            "IDP_CLIENT_SECRET": SECRET, "ASSERTION_ISSUER": IDP_ISSUER,
                                            "ASSERTION_SUBJECT": SUBJECT,
                                            "IDP_SIGNING_JWK": key.export_private()})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "jwt grant script: ok" in done.stdout
    assert jwks.hits == 1  # fetched by the server once, then cached
