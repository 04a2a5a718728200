"""The key providers of token signing with a secret and of encryption through the Admin API and a
realm export, as Keycloak has them: hmac-generated of each HS algorithm, rsa-enc-generated
(RSA-OAEP, RSA-OAEP-256; published with ``use: enc``) and aes-generated (kept, never published,
never answered)."""
import copy

import pytest
from django.test import Client

from realms.data.keys import realm_keys
from realms.models import Realm, RealmKey
from realms.representation import export_realm, import_realm

from .test_admin_key_providers import KEY_PROVIDER, jwks_kids, provider
from .test_admin_rest_api import acme, created_id, master_api  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("body, algorithm, use, key_type", [
    (provider("hs256", "hmac-generated", algorithm="HS256", secretSize="32"), "HS256", "SIG", "OCT"),
    (provider("hs384", "hmac-generated", algorithm="HS384"), "HS384", "SIG", "OCT"),
    (provider("enc", "rsa-enc-generated"), "RSA-OAEP", "ENC", "RSA"),
    (provider("enc256", "rsa-enc-generated", algorithm="RSA-OAEP-256", keySize="3072"), "RSA-OAEP-256", "ENC", "RSA"),
    (provider("aes", "aes-generated"), "AES", "ENC", "OCT"),
])
def test_admin_api_creates_lists_and_deletes_each_provider(master_api, acme, body, algorithm, use, key_type):
    component_id = created_id(master_api("post", "acme/components", body))
    key = RealmKey.objects.get(pk=component_id)
    assert (key.algorithm, key.use) == (algorithm, use.lower())
    rep = master_api("get", f"acme/components/{component_id}").json()
    assert rep["providerId"] == body["providerId"]
    assert all(name not in rep["config"] for name in ("secret", "privateKey"))
    metadata = master_api("get", "acme/keys").json()
    listed = [k for k in metadata["keys"] if k["kid"] == key.kid]
    assert [(k["type"], k["algorithm"], k["use"], k["status"]) for k in listed] == [(key_type, algorithm, use, "ACTIVE")]
    assert metadata["active"][algorithm] == key.kid
    published = {k["kid"]: k for k in Client().get("/realms/acme/protocol/openid-connect/certs").json()["keys"]}
    if key_type == "RSA":
        assert (published[key.kid]["use"], published[key.kid]["alg"]) == ("enc", algorithm)
        assert "d" not in published[key.kid] and "publicKey" in listed[0]
        assert realm_keys(acme).decryption_key(key.kid, algorithm) is not None
        assert realm_keys(acme).decryption_key(key.kid, "RSA1_5") is None
    else:  # a secret: never published, never answered
        assert key.kid not in published and "publicKey" not in listed[0]
    assert master_api("delete", f"acme/components/{component_id}").status_code == 204
    assert key.kid not in jwks_kids(acme)


def test_admin_api_changes_an_hmac_key_algorithm(master_api, acme):
    component_id = created_id(master_api("post", "acme/components", provider("h", "hmac-generated", algorithm="HS256")))
    kid = RealmKey.objects.get(pk=component_id).kid
    assert master_api("put", f"acme/components/{component_id}",
                      provider("h", "hmac-generated", algorithm="HS384")).status_code == 204
    key = RealmKey.objects.get(pk=component_id)
    assert (key.algorithm, key.kid) == ("HS384", kid)
    assert realm_keys(acme).signer("HS384")[0] == kid


@pytest.mark.parametrize("body, message", [
    (provider("x", "rsa-enc-generated", algorithm="RSA1_5"), "'Algorithm' should be RSA-OAEP or RSA-OAEP-256"),
    (provider("x", "hmac-generated", algorithm="HS1"), "'Algorithm' should be HS256, HS384 or HS512"),
    (provider("x", "aes-generated", secretSize="64"), "'AES Key size' should be 16, 24 or 32"),
])
def test_admin_api_refuses_what_is_not_served(master_api, acme, body, message):
    before = RealmKey.objects.filter(realm=acme).count()
    resp = master_api("post", "acme/components", body)
    assert (resp.status_code, resp.json()) == (400, {"errorMessage": message})
    assert RealmKey.objects.filter(realm=acme).count() == before


def test_each_provider_survives_export_and_import():
    realm = import_realm({"realm": "keys-rt", "components": {KEY_PROVIDER: [
        {"name": "rsa-generated", "providerId": "rsa-generated", "config": {"priority": ["100"]}},
        {"name": "hs256", "providerId": "hmac-generated", "config": {"algorithm": ["HS256"], "priority": ["10"]}},
        {"name": "hs384", "providerId": "hmac-generated",
         "config": {"algorithm": ["HS384"], "kid": ["my-kid"], "secret": ["c2VjcmV0LXNlY3JldC1zZWNyZXQtMTIzNDU2"],
                    "active": ["false"]}},
        {"name": "enc", "providerId": "rsa-enc-generated", "config": {"algorithm": ["RSA-OAEP-256"]}},
        {"name": "aes", "providerId": "aes-generated", "config": {"secretSize": ["32"]}},
    ]}}).realm
    rows = {k.provider_name: k for k in RealmKey.objects.filter(realm=realm)}
    assert {n: (k.algorithm, k.use, k.status) for n, k in rows.items()} == {
        "rsa-generated": ("RS256", "sig", "active"), "hs256": ("HS256", "sig", "active"),
        "hs384": ("HS384", "sig", "passive"), "enc": ("RSA-OAEP-256", "enc", "active"), "aes": ("AES", "enc", "active")}
    assert (rows["hs384"].kid, rows["hs384"].secret) == ("my-kid", b"secret-secret-secret-123456")
    assert len(rows["aes"].secret) == 32
    before = {n: (k.algorithm, k.secret if not k.public_key_pem else k.public_key_pem) for n, k in rows.items()}
    exported = export_realm(realm)
    by_name = {c["name"]: c for c in exported["components"][KEY_PROVIDER]}
    assert by_name["enc"]["providerId"] == "rsa-enc-generated" and by_name["enc"]["config"]["keyUse"] == ["ENC"]
    assert by_name["hs256"]["config"]["algorithm"] == ["HS256"] and "algorithm" not in by_name["aes"]["config"]
    Realm.objects.filter(pk=realm.pk).delete()
    again = import_realm(copy.deepcopy(exported)).realm
    after = {k.provider_name: (k.algorithm, k.secret if not k.public_key_pem else k.public_key_pem)
             for k in RealmKey.objects.filter(realm=again)}
    assert after == before
    assert RealmKey.objects.get(realm=again, provider_name="hs384").kid == "my-kid"


@pytest.mark.parametrize("component, warning", [
    ({"providerId": "rsa-enc-generated", "config": {"algorithm": ["RSA1_5"]}}, "encryption keys only"),
    ({"providerId": "hmac-generated", "config": {"algorithm": ["HS1"]}}, "hmac-generated key 'HS1' not supported"),
])
def test_an_import_reports_keys_not_served(component, warning):
    result = import_realm({"realm": "keys-bad", "components": {KEY_PROVIDER: [{"name": "k", **component}]}})
    assert any(warning in w for w in result.warnings), result.warnings
    assert not RealmKey.objects.filter(realm=result.realm, provider_name="k").exists()


@pytest.mark.parametrize("attributes, message", [
    ({"id.token.encrypted.response.alg": "RSA1_5"}, "Unsupported value of id.token.encrypted.response.alg"),
    ({"user.info.encrypted.response.alg": "RSA-OAEP", "user.info.encrypted.response.enc": "A128KW"},
     "Unsupported value of user.info.encrypted.response.enc"),
    ({"user.info.response.signature.alg": "none"}, "Unsupported value of user.info.response.signature.alg"),
    ({"request.object.encryption.alg": "RSA1_5"}, "Unsupported value of request.object.encryption.alg"),
])
def test_admin_api_refuses_a_client_asking_for_what_is_not_served(master_api, acme, attributes, message):
    resp = master_api("post", "acme/clients", {"clientId": "enc-app", "attributes": attributes})
    assert resp.status_code == 400 and message in resp.json()["errorMessage"]


def test_admin_api_accepts_a_client_asking_for_what_is_served(master_api, acme):
    resp = master_api("post", "acme/clients", {"clientId": "enc-app", "attributes": {
        "id.token.encrypted.response.alg": "RSA-OAEP-256", "id.token.encrypted.response.enc": "A256GCM",
        "user.info.response.signature.alg": "HS512", "access.token.signed.response.alg": "HS256",
        "request.object.encryption.alg": "RSA-OAEP", "request.object.encryption.enc": "A128CBC-HS256"}})
    assert resp.status_code == 201, resp.content
