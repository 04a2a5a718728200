"""Key rotation through the Admin API as kcadm and Terraform script it: the realm's keys are
Keycloak's KeyProvider components on ``/components``. The active key with the highest priority
signs; a passive one only verifies (in the JWKS); a disabled or deleted one does neither. Bad
config gets Keycloak's ``{"errorMessage": ...}`` and changes nothing; no private part is answered."""
import base64
import datetime
import json

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
from django.test import Client

from realms.data.keys import realm_keys
from realms.models import Event, RealmKey
from realms.users.accounts import create_user

from .test_admin_rest_api import PASSWORD, acme, created_id, issue, master_api, realm_admin  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db
KEY_PROVIDER = "org.keycloak.keys.KeyProvider"


def kid_of(jwt):
    head = jwt.split(".")[0]
    return json.loads(base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)))["kid"]


def jwks_kids(realm):
    return {k["kid"] for k in Client().get(f"/realms/{realm.name}/protocol/openid-connect/certs").json()["keys"]}


def userinfo(realm, access_token):
    return Client().get(f"/realms/{realm.name}/protocol/openid-connect/userinfo",
                        HTTP_AUTHORIZATION=f"Bearer {access_token}")


def provider(name, provider_id="rsa-generated", **config):
    return {"name": name, "providerId": provider_id, "providerType": KEY_PROVIDER,
            "config": {k: [v] for k, v in config.items()}}


def test_rotation_by_priority_through_the_components_resource(master_api, acme):
    create_user(acme, "ann", password=PASSWORD)
    old_kid = realm_keys(acme).signer("RS256")[0]
    before = issue("acme", "ann")["access_token"]
    assert kid_of(before) == old_kid

    resp = master_api("post", "acme/components", provider("rotated", priority="200", keySize="3072"))
    component_id = created_id(resp)
    assert resp["Location"].endswith(f"/admin/realms/acme/components/{component_id}")
    new_kid = RealmKey.objects.get(pk=component_id).kid
    after = issue("acme", "ann")["access_token"]
    assert kid_of(after) == new_kid != old_kid  # the higher priority signs at once
    assert {old_kid, new_kid} <= jwks_kids(acme)
    assert userinfo(acme, before).status_code == 200  # the old key still verifies

    rep = master_api("get", f"acme/components/{component_id}").json()
    assert rep == {"id": component_id, "name": "rotated", "providerId": "rsa-generated", "providerType": KEY_PROVIDER,
                   "parentId": acme.pk, "config": {"priority": ["200"], "enabled": ["true"], "active": ["true"],
                                                   "keySize": ["3072"], "algorithm": ["RS256"]}}
    listed = master_api("get", "acme/components", type=KEY_PROVIDER, parent=acme.pk).json()
    assert {c["id"] for c in listed} == set(RealmKey.objects.filter(realm=acme).values_list("pk", flat=True))
    assert "PRIVATE" not in json.dumps(listed) and all("privateKey" not in c["config"] for c in listed)
    assert master_api("get", "acme/components", type="org.keycloak.storage.UserStorageProvider").json() == []

    # Passive: no longer signs, still verifies.
    assert master_api("put", f"acme/components/{component_id}", provider("rotated", active="false")).status_code == 204
    assert kid_of(issue("acme", "ann")["access_token"]) == old_kid
    assert new_kid in jwks_kids(acme) and userinfo(acme, after).status_code == 200
    assert master_api("get", f"acme/components/{component_id}").json()["config"]["priority"] == ["200"]  # kept

    # Disabled: gone from the JWKS, its tokens refused.
    assert master_api("put", f"acme/components/{component_id}", provider("rotated", enabled="false")).status_code == 204
    assert new_kid not in jwks_kids(acme) and userinfo(acme, after).status_code == 401

    assert master_api("delete", f"acme/components/{component_id}").status_code == 204
    assert not RealmKey.objects.filter(pk=component_id).exists() and new_kid not in jwks_kids(acme)
    assert master_api("get", f"acme/components/{component_id}").status_code == 404
    events = Event.objects.filter(realm=acme, resource_type="COMPONENT", resource_path=f"components/{component_id}")
    assert sorted(events.values_list("type", flat=True)) == ["CREATE", "DELETE", "UPDATE", "UPDATE"]


def test_a_realm_left_without_a_signing_key_gets_a_fallback_as_keycloak(master_api, acme):
    create_user(acme, "ann", password=PASSWORD)
    for key in RealmKey.objects.filter(realm=acme, algorithm="RS256"):
        assert master_api("delete", f"acme/components/{key.pk}").status_code == 204
    kid = kid_of(issue("acme", "ann")["access_token"])
    fallback = RealmKey.objects.get(realm=acme, algorithm="RS256")
    assert (fallback.kid, fallback.provider_name, fallback.priority, fallback.status) == (
        kid, "fallback-RS256", -100, RealmKey.ACTIVE)
    assert kid in jwks_kids(acme)
    listed = master_api("get", "acme/components", type=KEY_PROVIDER, name="fallback-RS256").json()
    assert [(c["id"], c["providerId"], c["config"]["priority"]) for c in listed] == [
        (fallback.pk, "rsa-generated", ["-100"])]


def test_a_new_key_size_is_a_new_key_pair(master_api, acme):
    component_id = created_id(master_api("post", "acme/components", provider("sized", priority="5")))
    key = RealmKey.objects.get(pk=component_id)
    assert master_api("get", f"acme/components/{component_id}").json()["config"]["keySize"] == ["2048"]
    assert master_api("put", f"acme/components/{component_id}", provider("sized", keySize="4096")).status_code == 204
    changed = RealmKey.objects.get(pk=component_id)
    assert changed.kid != key.kid and changed.priority == 5
    assert master_api("get", f"acme/components/{component_id}").json()["config"]["keySize"] == ["4096"]


def _pem_pair(common_name="brought"):
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(private.public_key())
            .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
            .sign(private, hashes.SHA256()))
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    return pem, cert


@pytest.mark.parametrize("body, message", [
    (provider("x", priority="high"), "'Priority' should be a number"),
    (provider("x", active="yes"), "'Active' should be 'true' or 'false'"),
    (provider("x", keySize="1024"), "'Key size' should be 2048, 3072 or 4096"),
    (provider("x", algorithm="RS512"), "'Algorithm' should be RS256"),
    (provider("x", "ecdsa-generated", ecdsaEllipticCurveKey="P-384"), "'Elliptic Curve' should be P-256"),
    ({**provider("x"), "config": {"priority": ["1", "2"]}}, "'Priority' should be a single entry"),
    (provider("x", "rsa"), "'Private RSA Key' is required"),
    (provider("x", "rsa", privateKey="not a key"), "Failed to decode private key"),
    (provider("x", "rsa", privateKey=_pem_pair()[0], certificate="bm90IGEgY2VydA=="), "Failed to decode certificate"),
    (provider("x", "hmac-generated", secretSize="48"), "'Secret size' should be 16, 24, 32, 64, 128, 256 or 512"),
    (provider("x", "hmac-generated", algorithm="HS1"), "'Algorithm' should be HS256, HS384 or HS512"),
    (provider("x", "rsa-enc-generated", algorithm="RSA1_5"), "'Algorithm' should be RSA-OAEP or RSA-OAEP-256"),
    (provider("x", "aes-generated", secretSize="64"), "'AES Key size' should be 16, 24 or 32"),
    (provider("x", "ecdh-generated"), "Key provider 'ecdh-generated' is not supported: this server has "
                                      "rsa-generated, rsa, ecdsa-generated, eddsa-generated, hmac-generated, "
                                      "rsa-enc-generated, aes-generated keys only"),
])
def test_bad_config_is_refused_as_keycloak_and_changes_nothing(master_api, acme, body, message):
    before = set(RealmKey.objects.filter(realm=acme).values_list("kid", "status", "priority"))
    resp = master_api("post", "acme/components", body)
    assert (resp.status_code, resp.json()) == (400, {"errorMessage": message})
    assert set(RealmKey.objects.filter(realm=acme).values_list("kid", "status", "priority")) == before


def test_bad_update_changes_nothing(master_api, acme):
    component_id = created_id(master_api("post", "acme/components", provider("kept", priority="7")))
    resp = master_api("put", f"acme/components/{component_id}", provider("renamed", priority="7", enabled="maybe"))
    assert (resp.status_code, resp.json()) == (400, {"errorMessage": "'Enabled' should be 'true' or 'false'"})
    key = RealmKey.objects.get(pk=component_id)
    assert (key.provider_name, key.status) == ("kept", RealmKey.ACTIVE)


def test_an_imported_rsa_key_is_masked_and_kept(master_api, acme):
    pem, cert = _pem_pair()
    cert_b64 = base64.b64encode(cert.public_bytes(serialization.Encoding.DER)).decode()
    _, other_cert = _pem_pair("other")
    mismatch = master_api("post", "acme/components", provider(
        "brought", "rsa", priority="300", privateKey=pem,
        certificate=base64.b64encode(other_cert.public_bytes(serialization.Encoding.DER)).decode()))
    assert (mismatch.status_code, mismatch.json()) == (400, {"errorMessage": "Certificate does not match private key"})

    component_id = created_id(master_api("post", "acme/components", provider(
        "brought", "rsa", priority="300", privateKey=pem, certificate=cert_b64)))
    key = RealmKey.objects.get(pk=component_id)
    assert realm_keys(acme).signer("RS256")[0] == key.kid
    rep = master_api("get", f"acme/components/{component_id}").json()
    assert rep["config"]["privateKey"] == ["**********"] and rep["config"]["certificate"] == [cert_b64]
    assert pem not in json.dumps(rep)
    # The mask sent back keeps the stored key pair.
    assert master_api("put", f"acme/components/{component_id}", provider(
        "brought", "rsa", priority="10", privateKey="**********")).status_code == 204
    kept = RealmKey.objects.get(pk=component_id)
    assert (kept.kid, kept.priority, kept.private_key_pem) == (key.kid, 10, key.private_key_pem)


def test_ecdsa_and_eddsa_generated_keys_sign_their_algorithms(master_api, acme):
    ec_id = created_id(master_api("post", "acme/components", provider("ec", "ecdsa-generated", priority="100",
                                                                       ecdsaEllipticCurveKey="P-256")))
    ed_id = created_id(master_api("post", "acme/components", provider("ed", "eddsa-generated")))
    loaded = realm_keys(acme)
    assert loaded.signer("ES256")[0] == RealmKey.objects.get(pk=ec_id).kid
    assert loaded.signer("EdDSA")[0] == RealmKey.objects.get(pk=ed_id).kid
    assert master_api("get", f"acme/components/{ed_id}").json()["config"] == {
        "priority": ["0"], "enabled": ["true"], "active": ["true"], "eddsaEllipticCurveKey": ["Ed25519"]}


def test_key_providers_need_manage_realm_to_change(acme):
    viewer = realm_admin(acme, "viewer", "view-realm")
    assert viewer("get", "acme/components", type=KEY_PROVIDER).status_code == 200
    assert viewer("post", "acme/components", provider("x")).json() == {"error": "HTTP 403 Forbidden"}
    key = RealmKey.objects.filter(realm=acme).first()
    assert viewer("delete", f"acme/components/{key.pk}").status_code == 403
    assert RealmKey.objects.filter(pk=key.pk).exists()


def test_an_hmac_key_is_listed_as_keycloak_and_its_secret_never_answered(master_api, acme):
    component_id = created_id(master_api("post", "acme/components", provider("hmac", "hmac-generated", priority="50")))
    key = RealmKey.objects.get(pk=component_id)
    assert (key.algorithm, key.provider_id, len(key.secret)) == ("HS512", "hmac-generated", 64)  # Keycloak's default
    assert key.secret not in key.private_key_encrypted.encode()  # sealed at rest
    rep = master_api("get", f"acme/components/{component_id}").json()
    assert rep["config"] == {"priority": ["50"], "enabled": ["true"], "active": ["true"], "secretSize": ["64"],
                             "algorithm": ["HS512"]}
    metadata = master_api("get", "acme/keys").json()
    assert metadata["active"]["HS512"] == key.kid
    assert [k for k in metadata["keys"] if k["kid"] == key.kid] == [
        {"providerId": component_id, "providerPriority": 50, "kid": key.kid, "status": "ACTIVE", "type": "OCT",
         "algorithm": "HS512", "use": "SIG"}]
    assert key.kid not in jwks_kids(acme)  # a secret is no public key
    exported = master_api("post", "acme/partial-export").json()
    assert [c["config"]["secret"] for c in exported["components"][KEY_PROVIDER] if c["id"] == component_id] == [
        ["**********"]]  # exported as Keycloak does, the secret masked as in its partial export
    answers = [rep, metadata, master_api("get", "acme/components", type=KEY_PROVIDER).json(), exported,
               [e.representation for e in Event.objects.filter(realm=acme, resource_type="COMPONENT")]]
    encodings = {base64.b64encode(key.secret).decode().rstrip("="), base64.urlsafe_b64encode(key.secret).decode().rstrip("="),
                 key.secret.hex()}
    assert not any(e in json.dumps(answers) for e in encodings)
