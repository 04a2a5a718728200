"""partialImport's bulk path for users (docs/decisions/0036): every field of a user survives it
(credentials usable to sign in, stored as given; role mappings; groups; attributes; required
actions), and ``ifResourceExists`` with a conflict in the middle of a batch behaves as one user at
a time would: FAIL and any bad user change nothing, SKIP and OVERWRITE touch only the conflict."""
import base64
import hashlib
import json

import pytest
from argon2.low_level import Type, hash_secret_raw
from django.test import Client

from realms.models import Credential, Event, Group, Role, User
from realms.users.accounts import create_user
from tests.passwords import holds_password
from tests.realms.test_admin_rest_api import acme, master_api  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db

SALT = b"0123456789abcdef"


def _b64(raw):
    return base64.b64encode(raw).decode()


def _pbkdf2_sha256(password):
    """Keycloak's current form: secretData and credentialData."""
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), SALT, 1000, dklen=64)
    return {"type": "password", "createdDate": 1700000000000,
            "secretData": json.dumps({"value": _b64(digest), "salt": _b64(SALT), "additionalParameters": {}}),
            "credentialData": json.dumps({"hashIterations": 1000, "algorithm": "pbkdf2-sha256",
                                          "additionalParameters": {}})}


def _argon2(password):
    digest = hash_secret_raw(password.encode(), SALT, time_cost=2, memory_cost=1024, parallelism=1, hash_len=32,
                             type=Type.ID)
    return {"type": "password",
            "secretData": json.dumps({"value": _b64(digest), "salt": _b64(SALT)}),
            "credentialData": json.dumps({"hashIterations": 2, "algorithm": "argon2", "additionalParameters": {
                "hashLength": ["32"], "memory": ["1024"], "type": ["id"], "version": ["1.3"],
                "parallelism": ["1"]}})}


def _legacy_pbkdf2_sha256(password):
    """Keycloak's older form: hashedSaltedValue, salt, hashIterations, algorithm."""
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), SALT, 1000, dklen=64)
    return {"type": "password", "hashedSaltedValue": _b64(digest), "salt": _b64(SALT), "hashIterations": 1000,
            "algorithm": "pbkdf2-sha256"}


def _import(api, body):
    return api("post", "acme/partialImport", body)


def _sign_in(username, password):
    return Client().post("/realms/acme/protocol/openid-connect/token", {
        "grant_type": "password", "client_id": "admin-cli", "username": username, "password": password})


@pytest.fixture
def structure(acme, master_api):
    body = {"roles": {"realm": [{"name": "auditor"}]}, "clients": [{"clientId": "billing"}],
            "groups": [{"name": "finance", "subGroups": [{"name": "ap"}]}]}
    assert _import(master_api, body).status_code == 200
    body = {"roles": {"client": {"billing": [{"name": "payer"}]}}}
    assert _import(master_api, body).status_code == 200
    return acme


def test_every_field_of_a_user_survives_the_bulk_path(structure, master_api):
    acme = structure
    users = [
        {"username": "Ann", "email": "Ann@Example.org", "emailVerified": True, "firstName": "Ann", "lastName": "Lee",
         "enabled": True, "attributes": {"dept": ["ap", "ar"], "floor": ["3"]},
         "realmRoles": ["auditor"], "clientRoles": {"billing": ["payer"]}, "groups": ["/finance/ap", "finance"],
         "credentials": [_pbkdf2_sha256("ann-password-1")]},
        {"username": "bob", "credentials": [_argon2("bob-password-1")], "requiredActions": ["VERIFY_EMAIL"]},
        {"username": "cy", "credentials": [_legacy_pbkdf2_sha256("cy-password-1")]},
        {"username": "dee", "enabled": False, "notBefore": 42,
         "credentials": [{"type": "password", "value": "dee-password-1", "temporary": True}]},
    ]
    answer = _import(master_api, {"users": users}).json()
    assert (answer["added"], answer["skipped"], answer["overwritten"]) == (4, 0, 0)
    ann = User.objects.get(realm=acme, username="ann")
    assert [r for r in answer["results"] if r["resourceName"] == "ann"] == [
        {"action": "ADDED", "resourceType": "USER", "resourceName": "ann", "id": ann.pk}]
    assert (ann.email, ann.email_verified, ann.first_name, ann.last_name, ann.enabled) == (
        "ann@example.org", True, "Ann", "Lee", True)
    assert ann.attributes == {"dept": ["ap", "ar"], "floor": ["3"]}
    assert {(r.name, r.client.client_id if r.client else None) for r in ann.roles.select_related("client")} == {
        ("auditor", None), ("payer", "billing")}
    assert sorted(g.path for g in ann.groups.all()) == ["/finance", "/finance/ap"]
    # Pre-hashed passwords are stored as given (no re-hash at import) and sign the users in.
    stored = {u: User.objects.get(realm=acme, username=u).password_credential() for u in ("ann", "bob", "cy")}
    assert stored["ann"].secret_data.startswith("keycloak_pbkdf2_sha256$1000$")
    assert stored["ann"].created.year == 2023  # createdDate kept
    assert stored["bob"].secret_data.startswith("keycloak_argon2$id$1.3$1024$2$1$")
    assert stored["cy"].secret_data == stored["ann"].secret_data.replace(
        stored["ann"].secret_data.rsplit("$", 1)[1], _b64(hashlib.pbkdf2_hmac(
            "sha256", b"cy-password-1", SALT, 1000, dklen=64)))
    for username, password in (("ann", "ann-password-1"), ("cy", "cy-password-1")):
        assert _sign_in(username, password).status_code == 200, username
        assert _sign_in(username, "wrong-password").json()["error"] == "invalid_grant"
    bob = User.objects.get(realm=acme, username="bob")
    assert bob.required_actions == ["VERIFY_EMAIL"]
    assert holds_password(bob, "bob-password-1")
    dee = User.objects.get(realm=acme, username="dee")
    assert (dee.enabled, dee.not_before, dee.required_actions) == (False, 42, ["UPDATE_PASSWORD"])
    assert dee.password_credential().secret_data.startswith("argon2$argon2id$")  # plain: hashed under the policy
    assert holds_password(dee, "dee-password-1")
    # As Keycloak's import: no default role, and one admin event per user (of the realm).
    assert not ann.roles.filter(pk=acme.default_role_id).exists()
    paths = set(Event.objects.filter(realm=acme, kind=Event.ADMIN, type="CREATE", resource_type="REALM")
                .values_list("resource_path", flat=True))
    assert {f"users/{u.pk}" for u in User.objects.filter(realm=acme)} <= paths


def test_a_plain_password_against_the_policy_refuses_the_whole_import(acme, master_api):
    acme.password_policy = "length(12)"
    acme.save()
    users = [{"username": f"p{i}", "credentials": [{"type": "password", "value": "long-enough-pass"}]}
             for i in range(5)]
    users[3]["credentials"][0]["value"] = "short"
    resp = _import(master_api, {"users": users})
    assert resp.status_code == 400
    assert "users[3].credentials[0].value" in resp.json()["errorMessage"]
    assert not User.objects.filter(realm=acme, username__startswith="p").exists()


def _batch(n=50):
    return [{"username": f"u{i:03d}", "email": f"u{i:03d}@example.org", "attributes": {"n": [str(i)]},
             "credentials": [_pbkdf2_sha256(f"password-{i}")]} for i in range(n)]


def test_fail_with_a_conflict_in_the_middle_of_a_batch_changes_nothing(acme, master_api):
    create_user(acme, "u025")
    before = User.objects.filter(realm=acme).count()
    resp = _import(master_api, {"ifResourceExists": "FAIL", "users": _batch()})
    assert resp.status_code == 409
    assert resp.json() == {"errorMessage": "User with user name u025 already exists."}
    assert User.objects.filter(realm=acme).count() == before
    assert not Event.objects.filter(realm=acme, kind=Event.ADMIN).exists()
    # and an e-mail taken in the middle (duplicate e-mails off) is a conflict too
    create_user(acme, "someone", email="u030@example.org")
    resp = _import(master_api, {"users": [u for u in _batch() if u["username"] != "u025"]})
    assert resp.status_code == 409


@pytest.mark.parametrize("bad", [
    {"groups": ["/no-such-group"]},
    {"realmRoles": 7},
    {"username": "u000"},  # given twice in one body
    {"email": "x" * 300 + "@example.org"},
])
def test_a_bad_user_in_the_middle_of_a_batch_changes_nothing(acme, master_api, bad):
    users = _batch()
    users[30] = {**users[30], **bad}
    resp = _import(master_api, {"users": users})
    assert resp.status_code == 400, resp.content
    assert "users[30]" in resp.json()["errorMessage"]
    assert not User.objects.filter(realm=acme, username__startswith="u0").exists()
    assert not Credential.objects.filter(user__realm=acme, user__username__startswith="u0").exists()
    assert not Event.objects.filter(realm=acme, kind=Event.ADMIN).exists()


def test_skip_with_a_conflict_in_the_middle_of_a_batch_keeps_it(acme, master_api):
    old = create_user(acme, "u025", email="old@example.org", password="old-password-1")
    answer = _import(master_api, {"ifResourceExists": "SKIP", "users": _batch()}).json()
    assert (answer["added"], answer["skipped"], answer["overwritten"]) == (49, 1, 0)
    assert answer["results"][0] == {"action": "SKIPPED", "resourceType": "USER", "resourceName": "u025",
                                    "id": old.pk}
    assert [r["resourceName"] for r in answer["results"][1:]] == [f"u{i:03d}" for i in range(50) if i != 25]
    kept = User.objects.get(pk=old.pk)
    assert (kept.email, kept.attributes) == ("old@example.org", {})
    assert holds_password(kept, "old-password-1")
    assert holds_password(User.objects.get(realm=acme, username="u049"), "password-49")
    assert Event.objects.filter(realm=acme, kind=Event.ADMIN).count() == 49


def test_overwrite_with_a_conflict_in_the_middle_of_a_batch_replaces_it(acme, master_api):
    old = create_user(acme, "u025", email="old@example.org", password="old-password-1")
    auditor = Role.objects.create(realm=acme, name="auditor")
    old.roles.add(auditor)
    old.groups.add(Group.objects.create(realm=acme, name="old-group"))
    answer = _import(master_api, {"ifResourceExists": "OVERWRITE", "users": _batch()}).json()
    assert (answer["added"], answer["skipped"], answer["overwritten"]) == (49, 0, 1)
    new = User.objects.get(realm=acme, username="u025")
    assert answer["results"][0] == {"action": "OVERWRITTEN", "resourceType": "USER", "resourceName": "u025",
                                    "id": new.pk}
    assert not User.objects.filter(pk=old.pk).exists() or new.pk == old.pk
    assert (new.email, new.attributes) == ("u025@example.org", {"n": ["25"]})
    assert not new.roles.exists() and not new.groups.exists()
    assert not holds_password(new, "old-password-1") and holds_password(new, "password-25")
    assert Credential.objects.filter(user=new).count() == 1
    assert Event.objects.filter(realm=acme, kind=Event.ADMIN, type="UPDATE").count() == 1
    assert Event.objects.filter(realm=acme, kind=Event.ADMIN, type="CREATE").count() == 49


@pytest.mark.postgresql
def test_a_large_import_refreshes_the_planners_statistics(acme, master_api):
    """After a bulk import the sign-in's username lookup reads the username index, not the
    realm's users one by one (the table's statistics still described it as it was before)."""
    from django.db import connection

    from realms.users.storage import REALM_DATABASE

    users = [{"username": f"bulk{i:05}", "enabled": True} for i in range(1500)]
    assert _import(master_api, {"ifResourceExists": "FAIL", "users": users}).status_code == 200
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE relname = 'realms_user'")
        assert cursor.fetchone()[0] >= 1500  # the import's own rows counted by its ANALYZE
        cursor.execute("EXPLAIN SELECT * FROM realms_user WHERE realm_id = %s AND UPPER(username) = UPPER(%s) "
                       "AND service_account_client_id IS NULL ORDER BY username LIMIT 1", [acme.pk, "BULK00042"])
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "realms_user_username_upper_idx" in plan, plan
    assert REALM_DATABASE.get_user_by_username(acme, "BULK00042").username == "bulk00042"
