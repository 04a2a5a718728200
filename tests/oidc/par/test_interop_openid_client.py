"""panva's openid-client v6 (the pinned release and the newest) against the shared ``start_dev``
server (its own process, SQLite): a pushed authorization request carrying a signed request object
(JAR), ``private_key_jwt`` at the PAR and token endpoints, the login form, the code grant with
PKCE, for a client that requires PAR and request objects."""
import json
import os
import subprocess
from pathlib import Path

import pytest
from jwcrypto import jwk

ROOT = Path(__file__).resolve().parents[3]
JS = ROOT / "tests" / "js"
PACKAGES = {"openid-client": "6.8.", "openid-client-newest": "6.9."}
REDIRECT = "http://127.0.0.1:9/cb"
PASSWORD = "par-password-1"


def realm_representation(name, key):
    return {
        "realm": name,
        "enabled": True,
        "clients": [{
            "clientId": "par-app", "clientAuthenticatorType": "client-jwt", "redirectUris": [REDIRECT],
            "attributes": {
                "jwks.string": json.dumps({"keys": [json.loads(key.export_public())]}),
                "require.pushed.authorization.requests": "true",
                "request.object.required": "request or request_uri",
                "request.object.signature.alg": "ES256",
                "token.endpoint.auth.signing.alg": "ES256",
                "pkce.code.challenge.method": "S256",
            },
        }],
        "users": [{"username": "alice", "enabled": True, "email": "alice@example.org", "emailVerified": True,
                   "firstName": "Alice", "lastName": "Liddell",
                   "credentials": [{"type": "password", "value": PASSWORD}]}],
    }


@pytest.mark.parametrize("package", PACKAGES)
def test_openid_client_par_with_signed_request_object(start_dev, package):
    installed = JS / "node_modules" / package / "package.json"
    assert json.loads(installed.read_text())["version"].startswith(PACKAGES[package])
    base, import_realm = start_dev
    name = "parjs-" + package.rsplit("-", 1)[-1]
    key = jwk.JWK.generate(kty="EC", crv="P-256", kid="par-key")
    import_realm(realm_representation(name, key))
    done = subprocess.run(["node", "openid-client-par.mjs"], cwd=JS, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "OPENID_CLIENT": package, "IDP_ISSUER": f"{base}/realms/{name}",
                               "IDP_CLIENT_ID": "par-app", "IDP_SIGNING_JWK": key.export_private(),
                               "IDP_USERNAME": "alice", "IDP_PASSWORD": PASSWORD, "IDP_REDIRECT_URI": REDIRECT})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "par script: ok" in done.stdout
