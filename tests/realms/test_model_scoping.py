"""Names are unique within a realm, never globally; secrets and keys are protected at rest."""
import pytest
from django.db import IntegrityError, transaction
from jwcrypto import jwk, jws

from realms.data import crypto
from realms.data.keys import generate_key, realm_keys, rotate_key
from realms.models import Client, Group, Realm, RealmKey, Role, User

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_realms():
    return Realm.objects.create(name="one"), Realm.objects.create(name="two")


def must_violate(fn):
    with pytest.raises(IntegrityError), transaction.atomic():
        fn()


def test_same_names_in_two_realms_but_not_twice_in_one(two_realms):
    a, b = two_realms
    for realm in (a, b):
        User.objects.create(realm=realm, username="sam")
        Client.objects.create(realm=realm, client_id="app")
        Role.objects.create(realm=realm, name="reader")
        Group.objects.create(realm=realm, name="staff")
    must_violate(lambda: User.objects.create(realm=a, username="sam"))
    must_violate(lambda: Client.objects.create(realm=a, client_id="app"))
    must_violate(lambda: Role.objects.create(realm=a, name="reader"))
    must_violate(lambda: Group.objects.create(realm=a, name="staff"))


def test_client_roles_and_subgroups_are_scoped_to_their_owner(two_realms):
    a, _ = two_realms
    c1 = Client.objects.create(realm=a, client_id="c1")
    c2 = Client.objects.create(realm=a, client_id="c2")
    Role.objects.create(realm=a, name="reader")
    Role.objects.create(realm=a, client=c1, name="reader")  # a client role may share a realm role's name
    Role.objects.create(realm=a, client=c2, name="reader")
    must_violate(lambda: Role.objects.create(realm=a, client=c1, name="reader"))
    top = Group.objects.create(realm=a, name="top")
    other = Group.objects.create(realm=a, name="other")
    Group.objects.create(realm=a, parent=top, name="sub")
    Group.objects.create(realm=a, parent=other, name="sub")
    must_violate(lambda: Group.objects.create(realm=a, parent=top, name="sub"))
    assert Group.objects.get(parent=top, name="sub").path == "/top/sub"


def test_client_secret_is_encrypted_with_a_digest(two_realms):
    a, _ = two_realms
    client = Client(realm=a, client_id="svc")
    secret = client.regenerate_secret()
    client.save()
    client.refresh_from_db()
    assert secret not in client.secret_encrypted and secret not in client.secret_digest
    assert client.get_secret() == secret
    assert client.check_secret(secret)
    assert not client.check_secret(secret[:-1] + ("A" if secret[-1] != "A" else "B"))
    assert not client.check_secret("")


def test_crypto_helpers():
    token = crypto.encrypt("top secret")
    assert "top secret" not in token and crypto.decrypt(token) == "top secret"
    assert len(crypto.random_secret()) >= 43
    assert crypto.constant_time_equals("abc", b"abc") and not crypto.constant_time_equals("abc", "abd")


@pytest.mark.parametrize("alg", ["RS256", "ES256", "EdDSA"])
def test_generated_keys_sign_and_publish(two_realms, alg):
    a, _ = two_realms
    row = generate_key(a, alg)
    assert "PRIVATE" not in row.private_key_encrypted and row.private_key_pem.startswith("-----BEGIN PRIVATE KEY")
    kid, key = realm_keys(a).signer(alg)
    assert kid == row.kid
    token = jws.JWS(b"payload")
    token.add_signature(key, alg=alg, protected={"alg": alg, "kid": kid})
    published = {k["kid"]: k for k in realm_keys(a).jwks()["keys"]}
    assert "d" not in published[kid]  # public parts only
    verifier = jws.JWS()
    verifier.deserialize(token.serialize())
    verifier.verify(jwk.JWK(**published[kid]), alg=alg)


def test_rotation_keeps_old_key_for_verification(two_realms):
    a, _ = two_realms
    old = generate_key(a, "RS256")
    new = rotate_key(a, "RS256")
    old.refresh_from_db()
    assert old.status == RealmKey.PASSIVE and new.status == RealmKey.ACTIVE
    assert new.priority > old.priority
    keys = realm_keys(a)
    assert keys.signer("RS256")[0] == new.kid
    assert {old.kid, new.kid} <= {k["kid"] for k in keys.jwks()["keys"]}
    RealmKey.objects.filter(pk=old.pk).update(status=RealmKey.DISABLED)
    old.refresh_from_db()
    old.save()  # a change through the model drops the cache
    assert old.kid not in {k["kid"] for k in realm_keys(a).jwks()["keys"]}


def test_password_hashes_are_argon2id_and_decoy_checks_cost_the_same():
    import time

    from django.contrib.auth.hashers import check_password, make_password

    from realms.credentials.hashers import Argon2idHasher, spend_check_time

    encoded = make_password("right horse")
    assert encoded.startswith("argon2$argon2id$v=19$m=7168,t=5,p=1$")
    hasher = Argon2idHasher()
    assert hasher.verify("right horse", encoded) and not hasher.verify("wrong horse", encoded)
    assert check_password("right horse", encoded)

    def cpu(fn):
        start = time.process_time()
        for _ in range(10):
            fn()
        return time.process_time() - start

    spend_check_time("warm up")  # makes the decoy hash once per process
    real, decoy = cpu(lambda: check_password("wrong", encoded)), cpu(lambda: spend_check_time("wrong"))
    assert 0.5 < decoy / real < 2, (real, decoy)
