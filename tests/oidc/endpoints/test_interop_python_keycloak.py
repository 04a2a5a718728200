"""python-keycloak's ``KeycloakOpenID`` with its defaults against ``manage.py start_dev`` as a
developer runs it (its own process, SQLite): well-known, ``public_key()`` from the realm info,
the password grant, ``decode_token`` against the JWKS, userinfo, refresh, and ``logout()`` by
refresh token, after which the refresh token is refused. And ``manage.py import_realm
--override`` while the server runs: the server serves the new realm within a second."""
import base64
import time

import pytest
import requests
from cryptography.hazmat.primitives import serialization
from keycloak import KeycloakOpenID
from keycloak.exceptions import KeycloakPostError

from realms.data.shared_cache import CHECK_SECONDS

SECRET, PASSWORD = "backend-secret-" + "s" * 24, "python-keycloak-pw-1"


def realm_representation(name, secret, access_token_lifespan):
    return {
        "realm": name, "enabled": True, "accessTokenLifespan": access_token_lifespan,
        "clients": [{"clientId": "backend", "secret": secret, "directAccessGrantsEnabled": True,
                     "redirectUris": ["http://127.0.0.1/cb"]}],
        "users": [{"username": "alice", "enabled": True, "email": "alice@example.org", "firstName": "Alice",
                   "credentials": [{"type": "password", "value": PASSWORD}],
                   "realmRoles": [f"default-roles-{name}"]}],
    }


def test_python_keycloak_openid_client(start_dev):
    base, import_realm = start_dev
    import_realm(realm_representation("pykc", SECRET, 300))
    kc = KeycloakOpenID(server_url=base, realm_name="pykc", client_id="backend", client_secret_key=SECRET)

    assert kc.well_known()["issuer"] == f"{base}/realms/pykc"
    for path in ("/.well-known/openid-configuration", "/protocol/openid-connect/certs", ""):
        head = requests.head(f"{base}/realms/pykc{path}", timeout=10)
        assert head.status_code == 200 and head.headers["Content-Type"] == "application/json"
        assert head.content == b"" and int(head.headers["Content-Length"]) > 0
    public_key = serialization.load_der_public_key(base64.b64decode(kc.public_key()))

    token = kc.token("alice", PASSWORD)
    claims = kc.decode_token(token["access_token"])  # verified against the realm's JWKS
    assert claims["preferred_username"] == "alice" and claims["azp"] == "backend"
    # The realm info's public key is the one that signed it (what adapters configured from it do).
    KeycloakOpenID._verify_token(token["access_token"], _jwk(public_key))
    assert kc.userinfo(token["access_token"])["email"] == "alice@example.org"

    refreshed = kc.refresh_token(token["refresh_token"])
    assert refreshed["access_token"] != token["access_token"]

    assert kc.logout(refreshed["refresh_token"]) == {}  # 204
    with pytest.raises(KeycloakPostError) as refused:
        kc.refresh_token(refreshed["refresh_token"])
    assert refused.value.response_code == 400 and b"invalid_grant" in refused.value.response_body
    with pytest.raises(KeycloakPostError):
        kc.refresh_token(token["refresh_token"])  # the whole session is gone, not just one token


def _jwk(public_key):
    from jwcrypto import jwk

    return jwk.JWK.from_pem(public_key.public_bytes(serialization.Encoding.PEM,
                                                    serialization.PublicFormat.SubjectPublicKeyInfo))


def test_import_override_is_served_by_the_running_server_at_once(start_dev):
    base, import_realm = start_dev
    import_realm(realm_representation("live", SECRET, 300))
    token_url = f"{base}/realms/live/protocol/openid-connect/token"

    def password_grant(secret):
        return requests.post(token_url, data={"grant_type": "password", "username": "alice", "password": PASSWORD},
                             auth=("backend", secret), timeout=10)

    first = password_grant(SECRET)
    assert first.status_code == 200 and first.json()["expires_in"] == 300  # the realm is cached now

    new_secret = "rotated-secret-" + "r" * 24
    import_realm(realm_representation("live", new_secret, 120), override=True)
    imported_at = time.monotonic()
    while True:
        response = password_grant(new_secret)
        if response.status_code == 200:
            break
        assert time.monotonic() - imported_at < CHECK_SECONDS + 1.0, response.content
        time.sleep(0.05)
    assert response.json()["expires_in"] == 120
    assert time.monotonic() - imported_at <= CHECK_SECONDS + 0.5
    assert password_grant(SECRET).status_code == 401  # the old secret is gone everywhere
