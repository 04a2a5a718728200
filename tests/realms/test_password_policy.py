"""The realm's password policy (Keycloak's policy string): each rule with Keycloak's message, a
policy this server cannot enforce refused where it is set, and every path that sets a password
held to it: the UPDATE_PASSWORD required action, the console's form, the import of a plaintext
credential. Also the history, the forced expiry at sign-in and the hash algorithm of new hashes."""
import base64
import re
from datetime import timedelta

import pytest
from django.forms import modelform_factory
from django.http import QueryDict
from django.test import RequestFactory
from django.utils import timezone

from realms.admin.realm import RealmForm
from realms.credentials import password_policy
from realms.credentials.password_policy import PasswordPolicyError, PolicyConfigError
from realms.data import realm_cache
from realms.models import Client, Credential, Realm, Role, User
from realms.representation import RepresentationError, export_realm, import_realm
from realms.representation.services import create_realm
from realms.signin import engine, flows
from realms.sso.auth_sessions import AuthSession
from realms.users import storage
from realms.users.accounts import create_user
from tests.passwords import holds_password

pytestmark = pytest.mark.django_db

PASSWORD = "Old-passw0rd-2024"


@pytest.fixture(autouse=True)
def fresh_caches():
    realm_cache.clear()
    password_policy.parse.cache_clear()


@pytest.fixture
def blacklists(tmp_path, settings):
    (tmp_path / "common.txt").write_text("password123\nletmein\n")
    settings.IDP_PASSWORD_BLACKLISTS_DIR = str(tmp_path)
    return tmp_path


def realm_with(policy):
    return create_realm("acme", password_policy=policy)


# --- Each rule, with Keycloak's message ----------------------------------------------------------

RULES = [
    ("length(12)", "abcdefghijkl", "abcdefghijk", "Invalid password: minimum length 12."),
    ("length", "abcdefgh", "abcdefg", "Invalid password: minimum length 8."),  # Keycloak's default
    ("maxLength(10)", "abcdefghij", "abcdefghijk", "Invalid password: maximum length 10."),
    ("digits(2)", "ab12", "ab1c", "Invalid password: must contain at least 2 numerical digits."),
    ("lowerCase(2)", "abCD", "aBCD", "Invalid password: must contain at least 2 lower case characters."),
    ("upperCase(2)", "ABcd", "Abcd", "Invalid password: must contain at least 2 upper case characters."),
    ("specialChars(2)", "a!b?", "a!bc", "Invalid password: must contain at least 2 special characters."),
    ("notUsername(undefined)", "alice1", "alice", "Invalid password: must not be equal to the username."),
    ("notEmail(undefined)", "alice@example.org", "Alice@Example.com",
     "Invalid password: must not be equal to the email."),
    ("notContainsUsername", "al1ce-pass", "my-ALICE-pass", "Invalid password: Can not contain the username."),
    ("regexPattern([a-z]+[0-9])", "abc1", "abc1x", "Invalid password: fails to match regex pattern(s)."),
    ("passwordBlacklist(common.txt)", "not-listed", "PassWord123", "Invalid password: password is blacklisted."),
]


KEYS = {
    "length": "invalidPasswordMinLengthMessage", "maxLength": "invalidPasswordMaxLengthMessage",
    "digits": "invalidPasswordMinDigitsMessage", "lowerCase": "invalidPasswordMinLowerCaseCharsMessage",
    "upperCase": "invalidPasswordMinUpperCaseCharsMessage", "specialChars": "invalidPasswordMinSpecialCharsMessage",
    "notUsername": "invalidPasswordNotUsernameMessage", "notEmail": "invalidPasswordNotEmailMessage",
    "notContainsUsername": "invalidPasswordNotContainsUsernameMessage",
    "regexPattern": "invalidPasswordRegexPatternMessage", "passwordBlacklist": "invalidPasswordBlacklistedMessage",
}


@pytest.mark.parametrize("policy,good,bad,message", RULES, ids=[r[0] for r in RULES])
def test_each_rule_accepts_and_refuses_with_keycloaks_message(blacklists, policy, good, bad, message):
    realm = realm_with(policy)
    user = create_user(realm, "alice", email="alice@example.com")
    password_policy.validate(user, good)
    with pytest.raises(PasswordPolicyError) as refused:
        password_policy.validate(user, bad)
    assert str(refused.value) == message
    assert refused.value.key == KEYS[policy.partition("(")[0]]  # the Admin API's "error"


def test_the_issue_case_abc_is_refused_under_length_and_digits():
    user = create_user(realm_with("length(12) and digits(2)"), "alice")
    with pytest.raises(PasswordPolicyError, match=r"^Invalid password: minimum length 12\.$"):
        storage.set_password(user.realm, user, "abc")
    with pytest.raises(PasswordPolicyError, match="at least 2 numerical digits"):
        storage.set_password(user.realm, user, "abcdefghijkl")
    assert not user.has_usable_password()
    storage.set_password(user.realm, user, "abcdefghij12")
    assert holds_password(user, "abcdefghij12")


# --- Policies this server cannot enforce are refused where they are set ---------------------------

@pytest.mark.parametrize("policy,error", [
    ("length(12) and fooBar(3)", "Password policy not found: 'fooBar'"),
    ("length(twelve)", "Invalid config for length: Not a valid number"),
    ("regexPattern([a-z)", "Invalid config for regexPattern: Not a valid regular expression"),
    ("hashAlgorithm(md5)", "Invalid config for hashAlgorithm: Hash algorithm 'md5' is not supported"),
    ("maxAuthAge(soon)", "Invalid config for maxAuthAge: Not a valid number"),
    ("passwordBlacklist(../../etc/passwd)", "Invalid config for passwordBlacklist: Config required"),
    ("passwordBlacklist(missing.txt)", "Invalid config for passwordBlacklist: Password blacklist 'missing.txt' not found"),
])
def test_a_policy_this_server_cannot_enforce_fails_the_import(blacklists, policy, error):
    with pytest.raises(RepresentationError) as refused:
        import_realm({"realm": "acme", "passwordPolicy": policy})
    assert refused.value.path == "passwordPolicy" and refused.value.message.startswith(error)
    assert not Realm.objects.filter(name="acme").exists()


def test_a_blacklist_file_gone_after_the_policy_was_set_refuses_every_password(blacklists):
    user = create_user(realm_with("passwordBlacklist(common.txt)"), "alice")
    (blacklists / "common.txt").unlink()
    with pytest.raises(PasswordPolicyError) as refused:
        password_policy.validate(user, "not-listed")
    assert refused.value.key == "invalidPasswordGenericMessage"


def test_a_blacklist_needs_the_operators_directory(settings):
    settings.IDP_PASSWORD_BLACKLISTS_DIR = ""
    with pytest.raises(PolicyConfigError, match="IDP_PASSWORD_BLACKLISTS_DIR"):
        password_policy.parse("passwordBlacklist(common.txt)")


def test_keycloak_defaults_and_the_last_of_two_wins():
    policy = password_policy.parse("passwordHistory and forceExpiredPasswordChange and hashIterations")
    assert policy.config == {"passwordHistory": 3, "forceExpiredPasswordChange": 365, "hashIterations": -1}
    assert password_policy.parse("length(4) and length(9)").config == {"length": 9}


# --- The UPDATE_PASSWORD required action shows the reason next to the field ------------------------

@pytest.fixture
def sign_in(rf_realm):
    realm, client = rf_realm
    factory = RequestFactory()
    auth_session = AuthSession(root_id="root", tab_id="tab", realm_id=realm.pk, client_pk=client.pk,
                               protocol="openid-connect", client_data={"redirect_uri": "https://app.example/cb"})

    def step(post=None):
        request = factory.post("/", post) if post is not None else factory.get("/")
        return engine.run(engine.AuthContext(request, realm, client, auth_session, is_action=post is not None))

    return step


@pytest.fixture
def rf_realm():
    realm = realm_with("length(12) and digits(2) and passwordHistory(2) and forceExpiredPasswordChange(30)")
    client = Client.objects.create(realm=realm, client_id="web-app", redirect_uris=["https://app.example/cb"])
    return realm, client


def _age_password(user, days):
    user.credentials.filter(type=Credential.PASSWORD).update(created=timezone.now() - timedelta(days=days))


def test_an_expired_password_must_be_changed_under_the_policy_at_sign_in(rf_realm, sign_in):
    realm, _ = rf_realm
    user = create_user(realm, "alice", password=PASSWORD)
    _age_password(user, 31)

    assert sign_in().kind == flows.Outcome.CHALLENGE  # the login page
    outcome = sign_in({"username": "alice", "password": PASSWORD})
    assert outcome.kind == flows.Outcome.CHALLENGE and b'name="password-new"' in outcome.response.content
    user.refresh_from_db()
    assert user.required_actions == ["UPDATE_PASSWORD"]

    outcome = sign_in({"password-new": "short1", "password-confirm": "short1"})
    page = outcome.response.content.decode()
    field = re.search(r'<input id="password-new"[^>]*>\s*<p class="field-error"[^>]*>([^<]*)</p>', page)
    assert field and field.group(1) == "Invalid password: minimum length 12."
    assert 'aria-invalid="true"' in field.group(0)

    outcome = sign_in({"password-new": PASSWORD, "password-confirm": PASSWORD})  # the current one
    assert "Invalid password: must not be equal to any of last 2 passwords." in outcome.response.content.decode()

    assert sign_in({"password-new": "New-passw0rd-2025", "password-confirm": "New-passw0rd-2025"}).kind \
        == flows.Outcome.SUCCESS
    user.refresh_from_db()
    assert user.required_actions == [] and holds_password(user, "New-passw0rd-2025")


def test_a_recent_password_is_not_expired(rf_realm, sign_in):
    user = create_user(rf_realm[0], "alice", password=PASSWORD)
    _age_password(user, 29)
    sign_in()
    assert sign_in({"username": "alice", "password": PASSWORD}).kind == flows.Outcome.SUCCESS


def test_an_expired_password_stops_the_password_grant(rf_realm):
    realm, client = rf_realm
    user = create_user(realm, "alice", password=PASSWORD)
    _age_password(user, 31)
    request = RequestFactory().post("/")
    _, outcome = engine.run_direct_grant(request, realm, client, {"username": "alice", "password": PASSWORD},
                                        protocol="openid-connect")
    assert outcome.error == "resolve_required_actions" and outcome.description == "Account is not fully set up"


# --- History ---------------------------------------------------------------------------------------

def test_history_refuses_the_last_n_passwords_and_keeps_only_those():
    user = create_user(realm_with("passwordHistory(3)"), "alice")
    for password in ("first-pass-1", "second-pass-2", "third-pass-3"):
        storage.set_password(user.realm, user, password)
    for reused in ("first-pass-1", "second-pass-2", "third-pass-3"):
        with pytest.raises(PasswordPolicyError, match="must not be equal to any of last 3 passwords"):
            storage.set_password(user.realm, user, reused)
    storage.set_password(user.realm, user, "fourth-pass-4")
    storage.set_password(user.realm, user, "first-pass-1")  # three changes ago: allowed again
    types = sorted(user.credentials.values_list("type", flat=True))
    assert types == ["password", "password-history", "password-history"]
    assert holds_password(user, "first-pass-1") and not holds_password(user, "fourth-pass-4")


def test_without_a_history_policy_old_passwords_are_not_kept():
    user = create_user(realm_with(""), "alice", password="first-pass-1")
    storage.set_password(user.realm, user, "first-pass-1")
    assert list(user.credentials.values_list("type", flat=True)) == ["password"]


# --- The console's set-password form ----------------------------------------------------------------

def test_the_console_form_shows_the_policy_error_next_to_the_field(client):
    master = Realm.objects.get_or_create(name="master")[0]
    admin = User.objects.create(realm=master, username="root")
    admin.roles.add(Role.objects.get_or_create(realm=master, client=None, name="admin")[0])
    client.force_login(admin)
    user = create_user(realm_with("length(12) and upperCase(1)"), "alice")
    url = f"/admin/master/console/realms/user/{user.pk}/password/"

    response = client.post(url, {"new_password1": "short", "new_password2": "short"})
    assert response.status_code == 200
    page = response.content.decode()
    # In the field's own error list, which the input names (aria-describedby).
    assert re.search(r'<ul class="errorlist" id="id_new_password1_error">\s*<li>Invalid password: minimum length 12\.</li>',
                     page)
    assert re.search(r'<input [^>]*name="new_password1"[^>]*aria-describedby="[^"]*id_new_password1_error', page)
    assert not user.has_usable_password()

    response = client.post(url, {"new_password1": "long-enough-Pass", "new_password2": "long-enough-Pass"})
    user.forget_credentials()  # the rows this instance read above, before the change
    assert response.status_code == 302 and holds_password(user, "long-enough-Pass")


def test_the_console_realm_form_refuses_a_policy_it_cannot_enforce():
    form_class = modelform_factory(Realm, form=RealmForm, fields=["password_policy"])
    form = form_class(data=_policy_rows(("length", "12"), ("fooBar", "")))
    assert not form.is_valid()
    assert form.errors["password_policy"] == ["Row 2: fooBar is not a password policy this server knows."]
    form = form_class(data=_policy_rows(("length", "12"), ("notUsername", "")))
    assert not form.is_valid() and "password_policy" not in form.errors  # only the other field's "required"


def _policy_rows(*rows):
    """The policy builder's rows as the console's form posts them."""
    data = QueryDict(mutable=True)
    data["password_policy-present"] = "1"
    data.setlist("password_policy-policy", [name for name, _ in rows])
    data.setlist("password_policy-value", [value for _, value in rows])
    return data


# --- Import of plaintext credentials -----------------------------------------------------------------

def test_a_plaintext_credential_breaking_the_policy_fails_the_import_with_its_path():
    data = {"realm": "acme", "passwordPolicy": "length(12) and notUsername(undefined)", "users": [
        {"username": "bob", "credentials": [{"type": "password", "value": "bob-long-password"}]},
        {"username": "alice", "credentials": [{"type": "password", "value": "abc"}]},
    ]}
    with pytest.raises(RepresentationError) as refused:
        import_realm(data)
    assert str(refused.value) == "users[1].credentials[0].value: Invalid password: minimum length 12."
    assert not Realm.objects.filter(name="acme").exists()

    data["users"][1]["credentials"][0]["value"] = "alice-long-password"
    realm = import_realm(data).realm
    assert holds_password(User.objects.get(realm=realm, username="alice"), "alice-long-password")


# --- Hash algorithm and iterations ---------------------------------------------------------------------

def test_new_hashes_follow_the_hash_policy_and_old_ones_are_upgraded_at_sign_in():
    realm = realm_with("hashAlgorithm(pbkdf2-sha512) and hashIterations(1000)")
    user = create_user(realm, "alice", password=PASSWORD)
    encoded = user.password_credential().secret_data
    assert encoded.startswith("keycloak_pbkdf2_sha512$1000$")
    assert holds_password(user, PASSWORD) and user.password_credential().secret_data == encoded  # no rehash
    credential = export_realm(realm)["users"][0]["credentials"][0]
    assert '"algorithm": "pbkdf2-sha512"' in credential["credentialData"]
    assert '"hashIterations": 1000' in credential["credentialData"]

    realm.password_policy = "hashAlgorithm(pbkdf2-sha256)"  # default iterations: Keycloak's 600000
    realm.save()
    user = User.objects.get(pk=user.pk)
    assert holds_password(user, PASSWORD)
    assert user.password_credential().secret_data.startswith("keycloak_pbkdf2_sha256$600000$")

    realm.password_policy = ""  # Keycloak's default: argon2
    realm.save()
    user = User.objects.get(pk=user.pk)
    assert holds_password(user, PASSWORD)
    assert user.password_credential().secret_data.startswith("argon2$argon2id$")


def test_hash_iterations_set_argon2s_time_cost():
    user = create_user(realm_with("hashAlgorithm(argon2) and hashIterations(3)"), "alice", password=PASSWORD)
    assert ",t=3," in user.password_credential().secret_data


def test_new_argon2id_hashes_are_the_standard_ones_and_are_not_rehashed_at_sign_in():
    from argon2 import PasswordHasher
    from argon2.low_level import Type, hash_secret, hash_secret_raw

    from realms.credentials.hashers import Argon2idHasher

    realm = realm_with("")
    user = create_user(realm, "alice", password=PASSWORD)
    encoded = user.password_credential().secret_data
    variant, version, params, salt, digest = encoded.split("$")[1:]
    assert (variant, version, params) == ("argon2id", "v=19", "m=7168,t=5,p=1")  # Keycloak's parameters
    raw_salt = base64.b64decode(salt + "==")
    assert len(raw_salt) == 22  # Django's salt: 22 characters of 62, 131 bits
    # bit for bit what the reference implementation makes of this salt, and it verifies there
    assert base64.b64decode(digest + "=") == hash_secret_raw(PASSWORD.encode(), raw_salt, time_cost=5,
                                                              memory_cost=7168, parallelism=1, hash_len=32, type=Type.ID)
    assert PasswordHasher().verify(encoded.removeprefix("argon2"), PASSWORD)
    assert Argon2idHasher().encode(PASSWORD, "same-salt") == Argon2idHasher().encode(PASSWORD, "same-salt")
    assert holds_password(user, PASSWORD) and user.password_credential().secret_data == encoded  # no rehash
    assert not password_policy.needs_rehash(realm, encoded)
    assert password_policy.needs_rehash(Realm(name="other", password_policy="hashIterations(3)"), encoded)
    # hashes made by earlier releases (16-byte salts) still verify and are kept
    earlier = "argon2" + hash_secret(PASSWORD.encode(), b"0123456789abcdef", time_cost=5, memory_cost=7168,
                                     parallelism=1, hash_len=32, type=Type.ID).decode()
    assert Argon2idHasher().verify(PASSWORD, earlier) and not Argon2idHasher().verify("other", earlier)
    assert not password_policy.needs_rehash(realm, earlier)


def test_argon2id_hashes_take_turns_beyond_the_processs_cores(monkeypatch):
    import os
    import queue
    import threading
    import time

    from realms.credentials import hashers

    assert hashers._ARENAS.qsize() == len(os.sched_getaffinity(0))
    one = queue.LifoQueue()
    one.put(None)
    monkeypatch.setattr(hashers, "_ARENAS", one)  # as on a one-core worker
    inside, most = [0], [0]
    real = hashers.core

    def counted(*args):
        inside[0] += 1
        most[0] = max(most[0], inside[0])
        time.sleep(0.02)  # long enough for the other threads to arrive
        try:
            return real(*args)
        finally:
            inside[0] -= 1

    # every hash, new or checked, Django's encoding or Keycloak's, is libargon2's in an arena
    monkeypatch.setattr(hashers, "core", counted)
    hasher = hashers.Argon2idHasher()
    encoded = hasher.encode(PASSWORD, "some-salt")
    digest = encoded.rsplit("$", 1)[1]
    imported = hashers.encoded_from_keycloak("argon2", digest + "=" * (-len(digest) % 4),
                                             base64.b64encode(b"some-salt").decode(), 5, {"memory": ["7168"]})
    assert hashers.KeycloakArgon2Hasher().verify(PASSWORD, imported)
    results = []
    threads = [threading.Thread(target=lambda: results.append(hasher.verify(PASSWORD, encoded))) for _ in range(3)]
    threads += [threading.Thread(target=lambda: results.append(bool(hasher.encode(PASSWORD, "other-salt")))) for _ in range(2)]
    threads += [threading.Thread(target=lambda: results.append(hashers.KeycloakArgon2Hasher().verify(PASSWORD, imported)))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [True] * 6 and most[0] == 1 and one.qsize() == 1


def test_argon2_works_in_memory_kept_on_huge_pages_and_wiped():
    """The hash's 7 MiB are an arena of this process's, advised for transparent huge pages
    (``hg`` in the mapping's VmFlags), written by the hash (resident) and wiped after it."""
    import ctypes

    from argon2.low_level import Type, hash_secret_raw

    from realms.credentials import hashers

    hashers.Argon2idHasher().encode(PASSWORD, "some-salt")
    arena = hashers._ARENAS.queue[-1]  # the last used comes out first
    address = int(hashers.ffi.cast("uintptr_t", arena.memory))
    assert address % (2 << 20) == 0
    fields, lines = None, open("/proc/self/smaps").read().splitlines()
    for i, line in enumerate(lines):
        low, dash, high = line.split(" ", 1)[0].partition("-")
        if dash and int(low, 16) <= address < int(high, 16):
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("VmFlags:"))
            fields = dict(field.split(":", 1) for field in lines[i + 1:end + 1])
            break
    assert "hg" in fields["VmFlags"].split()
    assert int(fields["Rss"].split()[0]) >= 7168  # the hash wrote there, not in malloc's memory
    assert ctypes.string_at(address, 7168 * 1024) == bytes(7168 * 1024)  # and nothing of it is left
    # an imported hash with more memory than an arena still verifies (malloc's memory, the same result)
    big = hash_secret_raw(PASSWORD.encode(), b"0123456789abcdef", time_cost=1, memory_cost=16384, parallelism=2,
                          hash_len=32, type=Type.ID)
    assert hashers.argon2_raw(PASSWORD.encode(), b"0123456789abcdef", time_cost=1, memory_cost=16384,
                              parallelism=2, hash_len=32, type=Type.ID) == big


def test_earlier_passwords_round_trip_in_keycloaks_form_and_still_count():
    realm = realm_with("passwordHistory(2) and hashIterations(2)")
    user = create_user(realm, "alice", password="first-pass-1")
    storage.set_password(user.realm, user, "second-pass-2")
    exported = export_realm(realm)
    credentials = exported["users"][0]["credentials"]
    assert sorted(c["type"] for c in credentials) == ["password", "password-history"]
    assert all('"algorithm": "argon2"' in c["credentialData"] for c in credentials)

    realm.delete()
    again = import_realm(exported).realm
    user = User.objects.get(realm=again, username="alice")
    with pytest.raises(PasswordPolicyError, match="last 2 passwords"):
        storage.set_password(user.realm, user, "first-pass-1")


def test_the_user_storage_credential_update_is_held_to_the_policy():
    from realms.users import storage

    realm = realm_with("length(12)")
    user = create_user(realm, "alice")
    with pytest.raises(PasswordPolicyError, match="minimum length 12"):
        storage.REALM_DATABASE.update_credential(realm, user, Credential.PASSWORD, "short")
    assert not user.has_usable_password()
    assert storage.REALM_DATABASE.update_credential(realm, user, Credential.PASSWORD, "long-enough-pass")
    assert holds_password(user, "long-enough-pass")


def test_a_stored_policy_that_cannot_be_enforced_fails_closed_for_new_passwords_only():
    # A realm stored before policies were checked: setting a password is refused (never let
    # through unchecked), signing in with the current one still works.
    realm = realm_with("")
    user = create_user(realm, "alice", password=PASSWORD)
    Realm.objects.filter(pk=realm.pk).update(password_policy="length(12) and fooBar")
    user = User.objects.select_related("realm").get(pk=user.pk)
    with pytest.raises(PasswordPolicyError, match="^Invalid password: new password does not match password policies.$"):
        storage.set_password(user.realm, user, "a-perfectly-fine-password")
    assert holds_password(user, PASSWORD)



def test_the_user_model_refuses_djangos_password_methods_and_says_where_to_go():
    user = create_user(realm_with(""), "alice", password="first-pass-1")
    with pytest.raises(NotImplementedError, match="storage.set_password"):
        user.set_password("second-pass-2")
    with pytest.raises(NotImplementedError, match="check_password"):
        user.check_password("first-pass-1")
    assert holds_password(user, "first-pass-1")  # nothing was changed
