"""Every asymmetric algorithm Keycloak offers for tokens signs here: a realm whose default (or a
client whose attribute) names RS384/512, PS256/384/512 or ES384/512 gets a key of that algorithm
(the fallback key, as in Keycloak) instead of an error on every token request; its tokens verify
with jwcrypto against the realm's JWKS; the keys survive export and import; an algorithm the
server cannot sign with is refused at import. A client's HS256/384/512 signs with the realm's
hmac-generated key of it, verified by this server alone."""
import base64
import hashlib
import hmac
import json
import uuid

import pytest
from jwcrypto import jwk, jwt

from oidc import logout
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


def _header(token):
    head = token.split(".")[0]
    return json.loads(base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)))


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


# A realm's default signs what its clients verify with its JWKS (ID tokens, logout tokens, action
# tokens): never a secret (decision 0084).
@pytest.mark.parametrize("alg", ["HS256", "RS1", "none", ""])
def test_an_algorithm_the_server_cannot_sign_with_is_refused_at_import(db, alg):
    name = "a" + uuid.uuid4().hex[:10]
    with pytest.raises(RepresentationError, match="signature algorithm"):
        import_realm({"realm": name, "defaultSignatureAlgorithm": alg})
    assert not Realm.objects.filter(name=name).exists()


@pytest.mark.parametrize("attributes, message", [
    ({"access.token.signed.response.alg": "HS1"}, "Unsupported value of access.token.signed.response.alg"),
    ({"id.token.signed.response.alg": "none"}, "Unsupported value of id.token.signed.response.alg"),
    ({"authorization.signed.response.alg": "HS256"}, "Unsupported value of authorization.signed.response.alg"),
    ({"id.token.encrypted.response.alg": "RSA1_5"}, "Unsupported value of id.token.encrypted.response.alg"),
    ({"id.token.encrypted.response.alg": "dir"}, "Unsupported value of id.token.encrypted.response.alg"),
    ({"user.info.encrypted.response.alg": "RSA-OAEP", "user.info.encrypted.response.enc": "A128KW"},
     "Unsupported value of user.info.encrypted.response.enc"),
    ({"user.info.encrypted.response.enc": "A128GCM"}, "user.info.encrypted.response.enc needs"),
    ({"user.info.response.signature.alg": "none"}, "Unsupported value of user.info.response.signature.alg"),
    ({"authorization.encrypted.response.alg": "RSA-OAEP"}, "encrypted authorization responses are not supported"),
])
def test_a_client_asking_for_what_is_not_served_is_refused_at_import(db, attributes, message):
    name = "a" + uuid.uuid4().hex[:10]
    with pytest.raises(RepresentationError, match=message):
        import_realm({"realm": name, "clients": [{"clientId": "app", "attributes": attributes}]})
    assert not Realm.objects.filter(name=name).exists()


def test_what_is_served_or_switched_off_imports(db):
    realm = _realm("RS256", **{"tls.client.certificate.bound.access.tokens": "false",
                               "user.info.response.signature.alg": "unsigned", "id.token.signed.response.alg": "EdDSA",
                               "access.token.signed.response.alg": "HS384",
                               "id.token.encrypted.response.alg": "RSA-OAEP-256",
                               "user.info.encrypted.response.alg": "ECDH-ES+A128KW",
                               "user.info.encrypted.response.enc": "A256GCM"})
    assert realm.pk


@pytest.mark.parametrize("alg", ["HS256", "HS384", "HS512"])
def test_a_client_hmac_algorithm_signs_its_tokens_and_the_server_verifies_them(db, http, alg):
    """As Keycloak's SecretSignatureProvider: the realm's hmac-generated key of that algorithm
    (a fallback one generated first) signs; introspection, userinfo and logout's id_token_hint
    verify it; the JWKS never shows the secret."""
    realm = _realm("RS256", **{"access.token.signed.response.alg": alg, "id.token.signed.response.alg": alg})
    answer = http.post(token_url(realm), {"grant_type": "password", "username": "alice", "password": "pw-alice-1",
                                          "scope": "openid"}, HTTP_AUTHORIZATION=basic("app", SECRET))
    assert answer.status_code == 200, answer.content
    body = answer.json()
    key = RealmKey.objects.get(realm=realm, algorithm=alg, provider_id="hmac-generated")
    for token in (body["access_token"], body["id_token"]):
        header = _header(token)
        assert (header["alg"], header["kid"]) == (alg, key.kid)
        secret = jwk.JWK(kty="oct", k=base64.urlsafe_b64encode(key.secret).rstrip(b"=").decode())
        assert json.loads(jwt.JWT(jwt=token, key=secret, algs=[alg]).claims)["azp"] == "app"
    assert all(k["kty"] != "oct" for k in http.get(url(realm, "certs")).json()["keys"])
    introspected = http.post(url(realm, "token/introspect"), {"token": body["access_token"]},
                             HTTP_AUTHORIZATION=basic("app", SECRET)).json()
    assert introspected["active"] is True
    userinfo = http.get(url(realm, "userinfo"), HTTP_AUTHORIZATION=f"Bearer {body['access_token']}")
    assert userinfo.status_code == 200 and userinfo.json()["preferred_username"] == "alice"
    refreshed = http.post(token_url(realm), {"grant_type": "refresh_token", "refresh_token": body["refresh_token"]},
                          HTTP_AUTHORIZATION=basic("app", SECRET))
    assert refreshed.status_code == 200, refreshed.content
    hint = logout._verify_hint(realm, f"http://testserver/realms/{realm.name}", body["id_token"])
    assert hint["azp"] == "app"
    assert alg in http.get(f"/realms/{realm.name}/.well-known/openid-configuration").json()[
        "id_token_signing_alg_values_supported"]


def test_a_token_signed_with_an_hmac_key_of_another_algorithm_is_refused(db, http):
    realm = _realm("RS256", **{"access.token.signed.response.alg": "HS256"})
    token = http.post(token_url(realm), {"grant_type": "client_credentials"},
                      HTTP_AUTHORIZATION=basic("app", SECRET)).json()["access_token"]
    head, body, _ = token.split(".")
    key = RealmKey.objects.get(realm=realm, algorithm="HS256")
    forged_head = base64.urlsafe_b64encode(json.dumps({"alg": "HS512", "typ": "JWT", "kid": key.kid}).encode())
    forged_head = forged_head.rstrip(b"=").decode()
    signature = hmac.new(key.secret, f"{forged_head}.{body}".encode(), hashlib.sha512).digest()
    forged = f"{forged_head}.{body}.{base64.urlsafe_b64encode(signature).rstrip(b'=').decode()}"
    introspected = http.post(url(realm, "token/introspect"), {"token": forged}, HTTP_AUTHORIZATION=basic("app", SECRET))
    assert introspected.json() == {"active": False}
