"""panva's openid-client v6 (the pinned release and the newest) against the shared ``start_dev``
server: ID tokens and userinfo signed with each new algorithm and encrypted to the client's key
are decrypted and validated by it (tests/js/openid-client-encryption.mjs)."""
import json
import os
import subprocess
from pathlib import Path

import pytest
from jwcrypto import jwk

ROOT = Path(__file__).resolve().parents[3]
JS = ROOT / "tests" / "js"
PACKAGES = {"openid-client": "6.8.", "openid-client-newest": "6.9."}
PASSWORD = "enc-password-1"
SECRET = "enc-secret-1"


@pytest.mark.parametrize("package", PACKAGES)
@pytest.mark.parametrize("alg", ["RS384", "PS256", "PS512", "ES384", "ES512", "EdDSA", "HS256"])
def test_openid_client_decrypts_and_validates(start_dev, package, alg):
    installed = JS / "node_modules" / package / "package.json"
    assert json.loads(installed.read_text())["version"].startswith(PACKAGES[package])
    base, import_realm = start_dev
    name = f"encjs-{alg.lower()}-{package.rsplit('-', 1)[-1]}"
    key = jwk.JWK.generate(kty="RSA", size=2048, kid="enc-key", alg="RSA-OAEP-256")
    import_realm({
        "realm": name, "enabled": True,
        "clients": [{"clientId": "enc-app", "secret": SECRET, "directAccessGrantsEnabled": True, "attributes": {
            "jwks.string": json.dumps({"keys": [{**key.export_public(as_dict=True), "use": "enc"}]}),
            "id.token.signed.response.alg": alg, "user.info.response.signature.alg": alg,
            "id.token.encrypted.response.alg": "RSA-OAEP-256", "id.token.encrypted.response.enc": "A256GCM",
            "user.info.encrypted.response.alg": "RSA-OAEP-256", "user.info.encrypted.response.enc": "A256GCM"}}],
        "users": [{"username": "alice", "enabled": True, "email": "alice@example.org", "emailVerified": True,
                   "credentials": [{"type": "password", "value": PASSWORD}]}],
    })
    done = subprocess.run(["node", "openid-client-encryption.mjs"], cwd=JS, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "OPENID_CLIENT": package, "IDP_ISSUER": f"{base}/realms/{name}",
                                            "IDP_CLIENT_ID": "enc-app", "IDP_CLIENT_SECRET": SECRET, "IDP_ALG": alg,
                                            "IDP_ENC_JWK": key.export_private(), "IDP_USERNAME": "alice",
                                            "IDP_PASSWORD": PASSWORD})
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"encryption script: ok {alg}" in done.stdout
