"""Every asymmetric algorithm Keycloak offers for tokens signs here: a realm whose default (or a
client whose attribute) names RS384/512, PS256/384/512 or ES384/512 gets a key of that algorithm
(the fallback key, as in Keycloak) instead of an error on every token request; its tokens verify
with jwcrypto against the realm's JWKS; the keys survive export and import; an algorithm the
server cannot sign with is refused at import."""
import json
import uuid

import pytest
from jwcrypto import jwk, jwt

from realms.data.keys import realm_keys
from realms.models import Realm, RealmKey
from realms.representation import RepresentationError, export_realm, import_realm

from .conftest import SECRET, basic, token_url, url

ALGORITHMS = [alg for alg, _ in RealmKey.ALGORITHMS]


def _realm(default_alg, **client_attributes):
    name = "a" + uuid.uuid4().hex[:10]
    return import_realm({
        "realm": name, "enabled": True, "defaultSignatureAlgorithm": default_alg,
        "clients": [{"clientId": "app", "secret": SECRET, "serviceAccountsEnabled": True,
                     "directAccessGrantsEnabled": True, "attributes": client_attributes}],
        "users": [{"username": "alice", "enabled": True, "credentials": [{"type": "password", "value": "pw-alice-1"}]}],
    }).realm


def _verify(http, realm, token):
    keys = jwk.JWKSet.from_json(http.get(url(realm, "certs")).content.decode())
    return jwt.JWT(jwt=token, key=keys, algs=ALGORITHMS)


@pytest.mark.parametrize("alg", ALGORITHMS)
def test_realm_default_algorithm_signs_the_tokens(db, http, alg):
    realm = _realm(alg)
    answer = http.post(token_url(realm), {"grant_type": "client_credentials"}, HTTP_AUTHORIZATION=basic("app", SECRET))
    assert answer.status_code == 200, answer.content
    token = answer.json()["access_token"]
    verified = _verify(http, realm, token)
    assert json.loads(verified.header)["alg"] == alg
    assert json.loads(verified.claims)["azp"] == "app"
    assert alg in http.get(f"/realms/{realm.name}/.well-known/openid-configuration").json()[
        "id_token_signing_alg_values_supported"]


def test_client_id_token_algorithm(db, http):
    realm = _realm("RS256", **{"id.token.signed.response.alg": "PS384", "access.token.signed.response.alg": "ES512"})
    answer = http.post(token_url(realm), {"grant_type": "password", "username": "alice", "password": "pw-alice-1",
                                          "scope": "openid"}, HTTP_AUTHORIZATION=basic("app", SECRET))
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert json.loads(_verify(http, realm, body["id_token"]).header)["alg"] == "PS384"
    assert json.loads(_verify(http, realm, body["access_token"]).header)["alg"] == "ES512"


def test_keys_of_new_algorithms_survive_export_and_import(db, http):
    realm = _realm("PS256")
    for alg in ("PS256", "ES384"):
        realm_keys(realm).signer(alg)  # the fallback key, generated on first use
    before = {k.public_key_pem: k.algorithm for k in RealmKey.objects.filter(realm=realm, algorithm__in=("PS256", "ES384"))}
    assert sorted(before.values()) == ["ES384", "PS256"]
    exported = export_realm(realm)
    components = exported["components"]["org.keycloak.keys.KeyProvider"]
    by_alg = {c["config"].get("algorithm", c["config"].get("ecdsaEllipticCurveKey", [""]))[0]: c for c in components}
    assert by_alg["PS256"]["providerId"] == "rsa" and by_alg["P-384"]["providerId"] == "ecdsa-generated"
    Realm.objects.filter(pk=realm.pk).delete()
    again = import_realm(exported).realm
    after = {k.public_key_pem: k.algorithm for k in RealmKey.objects.filter(realm=again, algorithm__in=("PS256", "ES384"))}
    assert after == before


@pytest.mark.parametrize("alg", ["HS256", "RS1", "none", ""])
def test_an_algorithm_the_server_cannot_sign_with_is_refused_at_import(db, alg):
    name = "a" + uuid.uuid4().hex[:10]
    with pytest.raises(RepresentationError, match="signature algorithm"):
        import_realm({"realm": name, "defaultSignatureAlgorithm": alg})
    assert not Realm.objects.filter(name=name).exists()


@pytest.mark.parametrize("attributes, message", [
    ({"access.token.signed.response.alg": "HS256"}, "Unsupported value of access.token.signed.response.alg"),
    ({"id.token.signed.response.alg": "none"}, "Unsupported value of id.token.signed.response.alg"),
    ({"authorization.signed.response.alg": "RS1"}, "Unsupported value of authorization.signed.response.alg"),
    ({"id.token.encrypted.response.alg": "RSA-OAEP"}, "encrypted tokens and responses are not supported"),
    ({"user.info.encrypted.response.enc": "A128GCM"}, "encrypted tokens and responses are not supported"),
    ({"user.info.response.signature.alg": "RS256"}, "signed userinfo responses are not supported"),
    ({"tls.client.certificate.bound.access.tokens": "true"}, "certificate-bound tokens"),
])
def test_a_client_asking_for_what_is_not_served_is_refused_at_import(db, attributes, message):
    name = "a" + uuid.uuid4().hex[:10]
    with pytest.raises(RepresentationError, match=message):
        import_realm({"realm": name, "clients": [{"clientId": "app", "attributes": attributes}]})
    assert not Realm.objects.filter(name=name).exists()


def test_what_is_served_or_switched_off_imports(db):
    realm = _realm("RS256", **{"tls.client.certificate.bound.access.tokens": "false",
                               "user.info.response.signature.alg": "unsigned", "id.token.signed.response.alg": "EdDSA"})
    assert realm.pk
