"""Encrypted ID tokens and userinfo (JWE, Keycloak's id.token.encrypted.response.* and
user.info.encrypted.response.*) and signed userinfo (user.info.response.signature.alg): each to
the client's own ``use: enc`` key, decrypted here with jwcrypto and the client's private key; a
signed token encrypted is a nested JWT (signed, then encrypted: ``cty: JWT``)."""
import json
import uuid

import pytest
from jwcrypto import jwe, jwk, jwt

from oidc import client_auth
from realms.representation import import_realm
from tests.oidc.jwt_grant.conftest import JwksServer

from .conftest import SECRET, basic, token_url, url

SIGNING = ["RS256", "PS384", "ES256", "EdDSA", "RS512"]


def _client_keys():
    rsa = jwk.JWK.generate(kty="RSA", size=2048, kid="client-rsa-enc")
    ec = jwk.JWK.generate(kty="EC", crv="P-256", kid="client-ec-enc")
    jwks = {"keys": [{**k.export_public(as_dict=True), "use": "enc"} for k in (rsa, ec)]}
    return {"RSA": rsa, "EC": ec}, json.dumps(jwks)


def _realm(attributes, jwks=None):
    name = "e" + uuid.uuid4().hex[:10]
    client = {"clientId": "app", "secret": SECRET, "directAccessGrantsEnabled": True, "attributes": dict(attributes)}
    if jwks is not None:
        client["attributes"]["jwks.string"] = jwks
    return import_realm({
        "realm": name, "enabled": True, "clients": [client],
        "users": [{"username": "alice", "enabled": True, "email": "alice@example.com",
                   "credentials": [{"type": "password", "value": "pw-alice-1"}]}],
    }).realm


def _password_grant(http, realm):
    return http.post(token_url(realm), {"grant_type": "password", "username": "alice", "password": "pw-alice-1",
                                        "scope": "openid"}, HTTP_AUTHORIZATION=basic("app", SECRET))


def _decrypt(token, key):
    parsed = jwe.JWE()
    parsed.deserialize(token, key)
    return parsed.jose_header, parsed.payload.decode()


def _realm_jwks(http, realm):
    return jwk.JWKSet.from_json(http.get(url(realm, "certs")).content.decode())


@pytest.mark.parametrize("alg, enc, kty", [("RSA-OAEP", "A128GCM", "RSA"), ("RSA-OAEP-256", "A256CBC-HS512", "RSA"),
                                           ("ECDH-ES", "A256GCM", "EC"), ("ECDH-ES+A128KW", None, "EC")])
def test_an_encrypted_id_token_is_a_nested_jwt_to_the_client_key(db, http, alg, enc, kty):
    keys, jwks = _client_keys()
    attributes = {"id.token.encrypted.response.alg": alg, **({"id.token.encrypted.response.enc": enc} if enc else {})}
    realm = _realm(attributes, jwks)
    answer = _password_grant(http, realm)
    assert answer.status_code == 200, answer.content
    body = answer.json()
    header, inner = _decrypt(body["id_token"], keys[kty])
    assert (header["alg"], header["enc"], header["cty"], header["kid"]) == (
        alg, enc or "A128CBC-HS256", "JWT", f"client-{kty.lower()}-enc")
    claims = json.loads(jwt.JWT(jwt=inner, key=_realm_jwks(http, realm), algs=["RS256"]).claims)
    assert claims["aud"] == "app" and claims["typ"] == "ID"
    assert body["access_token"].count(".") == 2  # only the ID token is encrypted, as in Keycloak


def test_an_encrypted_id_token_without_a_client_key_is_refused(db, http):
    realm = _realm({"id.token.encrypted.response.alg": "RSA-OAEP"},
                   json.dumps({"keys": [{**jwk.JWK.generate(kty="RSA", size=2048).export_public(as_dict=True),
                                         "use": "sig"}]}))
    answer = _password_grant(http, realm)
    assert answer.status_code == 400
    assert answer.json()["error"] == "invalid_client"
    assert "encryption key" in answer.json()["error_description"]


@pytest.mark.parametrize("alg", SIGNING + ["HS256"])
def test_signed_userinfo(db, http, alg):
    realm = _realm({"user.info.response.signature.alg": alg})
    access_token = _password_grant(http, realm).json()["access_token"]
    answer = http.get(url(realm, "userinfo"), HTTP_AUTHORIZATION=f"Bearer {access_token}")
    assert answer.status_code == 200, answer.content
    assert answer["Content-Type"] == "application/jwt"
    token = answer.content.decode()
    if alg == "HS256":  # signed with the realm's secret: only its header can be read by the client
        head = token.split(".")[0]
        assert json.loads(jwk.base64url_decode(head))["alg"] == "HS256"
        return
    claims = json.loads(jwt.JWT(jwt=token, key=_realm_jwks(http, realm), algs=[alg]).claims)
    assert claims["iss"].endswith(f"/realms/{realm.name}") and claims["aud"] == "app"
    assert claims["preferred_username"] == "alice"


def test_encrypted_userinfo_plain_and_nested(db, http):
    keys, jwks = _client_keys()
    realm = _realm({"user.info.encrypted.response.alg": "RSA-OAEP-256", "user.info.encrypted.response.enc": "A192GCM"},
                   jwks)
    access_token = _password_grant(http, realm).json()["access_token"]
    answer = http.get(url(realm, "userinfo"), HTTP_AUTHORIZATION=f"Bearer {access_token}")
    assert answer.status_code == 200 and answer["Content-Type"] == "application/jwt"
    header, content = _decrypt(answer.content.decode(), keys["RSA"])
    assert "cty" not in header and json.loads(content)["email"] == "alice@example.com"

    realm = _realm({"user.info.encrypted.response.alg": "ECDH-ES", "user.info.response.signature.alg": "ES256"}, jwks)
    access_token = _password_grant(http, realm).json()["access_token"]
    answer = http.post(url(realm, "userinfo"), HTTP_AUTHORIZATION=f"Bearer {access_token}")
    header, inner = _decrypt(answer.content.decode(), keys["EC"])
    assert header["cty"] == "JWT" and header["enc"] == "A128CBC-HS256"
    claims = json.loads(jwt.JWT(jwt=inner, key=_realm_jwks(http, realm), algs=["ES256"]).claims)
    assert claims["aud"] == "app" and claims["email"] == "alice@example.com"


def test_discovery_lists_what_is_served(db, http):
    realm = _realm({})
    doc = http.get(f"/realms/{realm.name}/.well-known/openid-configuration").json()
    assert {"HS256", "HS384", "HS512", "PS256", "EdDSA"} <= set(doc["id_token_signing_alg_values_supported"])
    assert "none" not in doc["id_token_signing_alg_values_supported"]
    assert {"none", "HS512", "ES512"} <= set(doc["userinfo_signing_alg_values_supported"])
    for prefix in ("id_token", "userinfo"):
        assert "RSA1_5" not in doc[f"{prefix}_encryption_alg_values_supported"]
        assert {"RSA-OAEP", "RSA-OAEP-256", "ECDH-ES"} <= set(doc[f"{prefix}_encryption_alg_values_supported"])
        assert {"A128GCM", "A256GCM", "A128CBC-HS256"} <= set(doc[f"{prefix}_encryption_enc_values_supported"])


@pytest.fixture
def client_jwks():
    """The client's JWKS served on loopback: its keys as ``keys``, fetched through the SSRF-safe client."""
    server = JwksServer()
    yield server
    server.close()
    client_auth._jwks_by_url.pop((server.url, "enc"), None)


def test_the_key_comes_from_the_client_jwks_url(db, http, outbound_loopback, client_jwks):
    key = jwk.JWK.generate(kty="RSA", size=2048, kid="from-url", use="enc")
    client_jwks.keys = [key]
    realm = _realm({"id.token.encrypted.response.alg": "RSA-OAEP", "use.jwks.url": "true", "jwks.url": client_jwks.url})
    body = _password_grant(http, realm).json()
    header, _ = _decrypt(body["id_token"], key)
    assert header["kid"] == "from-url"
    _password_grant(http, realm)
    assert client_jwks.hits == 1  # cached, as the client's signing keys are


def test_a_jwks_url_the_outbound_rules_refuse_is_never_used(db, http, client_jwks):
    client_jwks.keys = [jwk.JWK.generate(kty="RSA", size=2048, kid="from-url", use="enc")]
    realm = _realm({"id.token.encrypted.response.alg": "RSA-OAEP", "use.jwks.url": "true", "jwks.url": client_jwks.url})
    answer = _password_grant(http, realm)
    assert (answer.status_code, answer.json()["error"]) == (400, "invalid_client")
    assert client_jwks.hits == 0  # loopback: refused before any request
