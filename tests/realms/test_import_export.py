"""Keycloak realm import and export against real Keycloak files (tests/data/keycloak)."""
import base64
import copy
import hashlib
import io
import json
from pathlib import Path

import pytest
from argon2.low_level import Type, hash_secret_raw
from django.apps import apps
from django.core.management import call_command

from realms.data import crypto, rows
from realms.data.keys import realm_keys
from realms.models import (
    Client,
    ClientScope,
    Credential,
    Group,
    ProtocolMapper,
    Realm,
    RealmKey,
    Role,
    User,
    client_role_names,
    effective_role_ids,
    effective_role_ids_column,
    effective_roles,
    realm_role_names,
)
from realms.representation import RepresentationError, export_realm, import_realm
from tests.passwords import holds_password

pytestmark = pytest.mark.django_db

INTEROP = Path(__file__).resolve().parents[1] / "data" / "keycloak"
FILES = sorted(p.name for p in INTEROP.glob("*.json"))


def load(name):
    return json.loads((INTEROP / name).read_text())


def user(realm, username):
    return User.objects.get(realm=realm, username=username)


def roles_of(u):
    roles = effective_roles(u)
    return set(realm_role_names(roles)), {k: set(v) for k, v in client_role_names(roles).items()}


def row_counts():
    return {m._meta.label: m.objects.count() for m in apps.get_app_config("realms").get_models(include_auto_created=True)}


def test_all_interop_files_are_present():
    assert len(FILES) == 5


@pytest.mark.parametrize("name", FILES)
def test_every_interop_file_imports(name):
    data = load(name)
    result = import_realm(data)
    realm = result.realm
    assert realm.name == data["realm"]
    assert Client.objects.filter(realm=realm).count() >= len(data.get("clients", []))
    assert User.objects.filter(realm=realm).count() == len(data.get("users", []))
    for c in data.get("clients", []):
        client = Client.objects.get(realm=realm, client_id=c["clientId"])
        assert client.redirect_uris == c.get("redirectUris", [])
        if c.get("secret"):
            assert client.get_secret() == c["secret"]
    # Every realm can sign: with the file's key or a generated RS256 one.
    assert realm_keys(realm).signer("RS256") is not None
    assert not [w for w in result.warnings if w.startswith(("clientPolicies", "clientProfiles"))]  # stored
    for key in ("authenticationFlows", "authenticatorConfig", "requiredActions"):
        assert not any(w.startswith(f"{key}: ") for w in result.warnings)  # imported (test_flows_stored.py)
    # Authorization settings are imported, applications' (tests/authz) and admin permissions alike.
    assert not [w for w in result.warnings if "authorizationSettings" in w or "adminPermissions" in w]


def test_fgap_full_export_details():
    data = load("keycloak-fgap-realm-kc26-full-export.json")
    result = import_realm(data)
    realm = result.realm
    assert realm.id == data["id"]  # Keycloak ids survive
    # Every enabled required action of the export is implemented here (VERIFY_PROFILE included).
    assert not [w for w in result.warnings if "is not available on this server" in w and "requiredActions" in w]
    assert realm.default_role.name == "default-roles-fgap"
    assert realm.otp_policy["otpPolicyType"] == data["otpPolicyType"]
    assert realm.webauthn_policy["webAuthnPolicyRpEntityName"] == data["webAuthnPolicyRpEntityName"]
    assert Group.objects.get(realm=realm, name="AT-DUA").parent.name == "DUA"
    u = user(realm, "at-dua-0")
    assert u.id == "9786d2ca-6e00-4e5e-ae18-338ddc8106c6"
    assert [g.path for g in u.groups.all()] == ["/DUA/AT-DUA"]
    # Parent group DUA grants realm-management query roles.
    assert roles_of(u) == (
        {"default-roles-fgap", "offline_access", "uma_authorization"},
        {"account": {"view-profile", "manage-account", "manage-account-links"},
         "realm-management": {"query-groups", "query-clients", "query-users"}},
    )
    # Every key provider is imported: the rsa-generated key pair, the rsa-enc one, the hmac and aes
    # secrets under their kids.
    key = RealmKey.objects.get(realm=realm, provider_id="rsa-generated")
    assert (key.algorithm, key.priority, key.status) == ("RS256", 100, "active")
    assert key.certificate_pem.startswith("-----BEGIN CERTIFICATE-----")
    assert {(k.provider_id, k.algorithm, k.use) for k in RealmKey.objects.filter(realm=realm)} == {
        ("rsa-generated", "RS256", "sig"), ("rsa-enc-generated", "RSA-OAEP", "enc"),
        ("hmac-generated", "HS512", "sig"), ("aes-generated", "AES", "enc")}
    assert RealmKey.objects.get(realm=realm, algorithm="AES").kid == "6a835ddf-5514-4bb8-a337-c6233f5cd1f4"
    assert not [w for w in result.warnings if w.startswith('components["org.keycloak.keys.KeyProvider"]')]
    # Mappers of a file's client scopes come in as written.
    mapper = ProtocolMapper.objects.get(client_scope__realm=realm, client_scope__name="service_account",
                                        name="Client ID")
    assert mapper.config["user.session.note"] == "client_id"


def test_roles_read_with_a_users_row_are_the_roles_read_alone():
    # The Admin API reads its caller's roles in the query of their row (effective_role_ids_column).
    realm = import_realm(load("keycloak-testsuite-testrealm.json")).realm
    for name in ("test-user@localhost", "topgroupuser", "level2groupuser", "rolerichuser"):
        alone = user(realm, name)
        [with_row] = rows.fetch(User, "id = %s", [alone.pk], extra=effective_role_ids_column(alone.pk))
        assert effective_role_ids(with_row) == effective_role_ids(alone) != set()
        assert effective_role_ids(with_row) == effective_role_ids(alone)  # read again, alone, once used


def test_testrealm_effective_roles_are_exactly_what_the_file_implies():
    realm = import_realm(load("keycloak-testsuite-testrealm.json")).realm
    assert roles_of(user(realm, "test-user@localhost")) == (
        {"user", "offline_access"},
        {"test-app": {"customer-user"}, "account": {"view-profile", "manage-account", "manage-account-links"}},
    )
    assert roles_of(user(realm, "topgroupuser")) == ({"user"}, {})
    # level2group's own roles plus its parent topGroup's.
    assert roles_of(user(realm, "level2groupuser")) == ({"admin", "user"}, {"test-app": {"customer-user"}})
    # Direct client roles, a subgroup, its parent group, a realm composite holding realm and
    # client roles, and a client composite holding a realm role.
    assert roles_of(user(realm, "rolerichuser")) == (
        {"admin", "user", "realm-composite-role", "sample-realm-role", "customer-user-premium"},
        {
            "test-app": {"customer-user", "customer-admin-composite-role", "customer-admin", "sample-client-role"},
            "account": {"manage-account", "manage-account-links", "view-profile"},
            "test-app-scope": {"test-app-allowed-by-scope", "test-app-disallowed-by-scope"},
        },
    )
    # Old-style defaultRoles become the default role's composites, beside the built-ins'.
    assert {str(r) for r in realm.default_role.composites.all()} == {
        "user", "offline_access", "uma_authorization", "account:view-profile", "account:manage-account"}
    # "fullScopeAllowed": "false" (a string) is read as a boolean.
    scoped = Client.objects.get(realm=realm, client_id="test-app-scope")
    assert scoped.full_scope_allowed is False
    assert {str(r) for r in scoped.scope_roles.all()} == {
        "user", "admin", "test-app:customer-admin-composite-role", "test-app-scope:test-app-allowed-by-scope"}
    assert realm.smtp_server["port"] == "3025" and realm.supported_locales == ["en", "de"]
    group = Group.objects.get(realm=realm, name="topGroup")
    assert group.attributes == {"topAttribute": ["true"]}
    # The legacy realm privateKey/publicKey pair becomes the signing key.
    public_der = base64.b64decode(load("keycloak-testsuite-testrealm.json")["publicKey"])
    from cryptography.hazmat.primitives import serialization

    key = RealmKey.objects.get(realm=realm)
    assert serialization.load_pem_public_key(key.public_key_pem.encode()).public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo) == public_der
    assert holds_password(user(realm, "test-user@localhost"), "password")


def test_keycloak_argon2_password_verifies_and_is_upgraded():
    realm = import_realm(load("keycloak-fgap-realm-kc26-full-export.json")).realm
    u = user(realm, "at-dua-0")
    assert u.password_credential().secret_data.startswith("keycloak_argon2$")
    assert not holds_password(u, "wrong")
    assert holds_password(u, "test")
    assert u.password_credential().secret_data.startswith("argon2$argon2id$")
    assert holds_password(u, "test")


def _pbkdf2(digest, password, salt, iterations):
    return base64.b64encode(hashlib.pbkdf2_hmac(digest, password.encode(), salt, iterations, dklen=64)).decode()


def test_every_credential_form_becomes_a_usable_password():
    salt = b"0123456789abcdef"
    salt_b64 = base64.b64encode(salt).decode()
    argon = base64.b64encode(hash_secret_raw(b"pw-argon", salt, time_cost=3, memory_cost=8192, parallelism=1,
                                             hash_len=32, type=Type.ID)).decode()
    users = [
        {"username": "plain", "credentials": [{"type": "password", "value": "pw-plain", "temporary": True}]},
        {"username": "old-sha256", "credentials": [{
            "type": "password", "hashedSaltedValue": _pbkdf2("sha256", "pw-256", salt, 1000), "salt": salt_b64,
            "hashIterations": 1000, "algorithm": "pbkdf2-sha256"}]},
        {"username": "new-sha512", "credentials": [{
            "type": "password",
            "secretData": json.dumps({"value": _pbkdf2("sha512", "pw-512", salt, 1000), "salt": salt_b64,
                                      "additionalParameters": {}}),
            "credentialData": json.dumps({"hashIterations": 1000, "algorithm": "pbkdf2-sha512",
                                          "additionalParameters": {}})}]},
        {"username": "new-sha1", "credentials": [{
            "type": "password",
            "secretData": json.dumps({"value": _pbkdf2("sha1", "pw-1", salt, 1000), "salt": salt_b64}),
            "credentialData": json.dumps({"hashIterations": 1000, "algorithm": "pbkdf2"})}]},
        {"username": "new-argon2", "credentials": [{
            "type": "password",
            "secretData": json.dumps({"value": argon, "salt": salt_b64, "additionalParameters": {}}),
            "credentialData": json.dumps({"hashIterations": 3, "algorithm": "argon2", "additionalParameters": {
                "hashLength": ["32"], "memory": ["8192"], "type": ["id"], "version": ["1.3"],
                "parallelism": ["1"]}})}]},
        {"username": "otp-user", "credentials": [{
            "type": "otp", "secretData": json.dumps({"value": "JBSWY3DPEHPK3PXP"}),
            "credentialData": json.dumps({"subType": "totp", "digits": 6, "period": 30, "algorithm": "HmacSHA1"})}]},
    ]
    realm = import_realm({"realm": "creds", "users": users}).realm
    assert user(realm, "plain").required_actions == ["UPDATE_PASSWORD"]
    for username, password in [("plain", "pw-plain"), ("old-sha256", "pw-256"), ("new-sha512", "pw-512"),
                               ("new-sha1", "pw-1"), ("new-argon2", "pw-argon")]:
        u = user(realm, username)
        assert holds_password(u, password), username
        assert u.password_credential().secret_data.startswith("argon2$argon2id$"), username
    otp = Credential.objects.get(user__realm=realm, type="otp")
    # Kept encrypted at rest (realms.data.crypto); the export below gives Keycloak's string back.
    assert otp.credential_data["digits"] == 6 and "JBSWY3DPEHPK3PXP" not in otp.secret_data
    assert json.loads(crypto.decrypt(otp.secret_data))["value"] == "JBSWY3DPEHPK3PXP"

    # Export writes Keycloak's argon2 form for our Argon2id hashes; it imports back and verifies.
    exported = {u["username"]: u for u in export_realm(realm)["users"]}
    cred = exported["plain"]["credentials"][0]
    data = json.loads(cred["credentialData"])
    assert data["algorithm"] == "argon2" and data["additionalParameters"]["type"] == ["id"]
    again = import_realm({"realm": "creds2", "users": [exported["plain"]]}).realm
    assert holds_password(user(again, "plain"), "pw-plain")
    assert exported["otp-user"]["credentials"][0]["secretData"] == users[-1]["credentials"][0]["secretData"]


def _with(data, mutate):
    data = copy.deepcopy(data)
    mutate(data)
    return data


INVALID = [
    ("bad type", lambda d: d["clients"][3].update(redirectUris="http://x/*"),
     "clients[3].redirectUris: expected a list of strings"),
    ("bad boolean", lambda d: d["users"][0].update(enabled="yes"), "users[0].enabled: expected a boolean"),
    ("dangling composite", lambda d: d["roles"]["realm"][5]["composites"]["realm"].append("no-such-role"),
     "roles.realm[5].composites.realm[1]: unknown realm role 'no-such-role'"),
    ("unknown client in user's client roles", lambda d: d["users"][1]["clientRoles"].update({"nope": ["x"]}),
     "users[1].clientRoles.nope[0]: unknown client 'nope'"),
    ("unknown group", lambda d: d["users"][3].update(groups=["/topGroup/none"]),
     "users[3].groups[0]: unknown group '/topGroup/none'"),
    ("bad credential algorithm", lambda d: d["users"][2].update(credentials=[{
        "type": "password", "hashedSaltedValue": "AAAA", "salt": "AAAA", "hashIterations": 1, "algorithm": "md5"}]),
     "users[2].credentials[0].algorithm: unsupported password hash algorithm 'md5'"),
    ("duplicate clientId", lambda d: d["clients"].append({"clientId": "test-app"}),
     "clients[8].clientId: duplicate 'test-app'"),
    ("unknown default role", lambda d: d.update(defaultRole={"name": "missing"}),
     "defaultRole.name: unknown realm role 'missing'"),
]


@pytest.mark.parametrize("label,mutate,message", INVALID, ids=[x[0] for x in INVALID])
def test_invalid_file_changes_nothing_and_names_the_path(label, mutate, message):
    data = load("keycloak-testsuite-testrealm.json")
    # The realm exists already: even the replacement under override must roll back.
    existing = import_realm({"realm": data["realm"], "users": [{"username": "keeper"}]}).realm
    before = row_counts()
    with pytest.raises(RepresentationError) as exc:
        import_realm(_with(data, mutate), override=True)
    assert str(exc.value) == message
    assert row_counts() == before
    assert Realm.objects.get(name=data["realm"]).id == existing.id
    assert User.objects.filter(realm=existing, username="keeper").exists()


def test_existing_realm_needs_override_and_override_replaces_it():
    import_realm({"realm": "dup", "clients": [{"clientId": "old-app"}]})
    with pytest.raises(RepresentationError, match="realm 'dup' already exists"):
        import_realm({"realm": "dup"})
    realm = import_realm({"realm": "dup", "clients": [{"clientId": "new-app"}]}, override=True).realm
    ids = set(Client.objects.filter(realm=realm).values_list("client_id", flat=True))
    assert "new-app" in ids and "old-app" not in ids


def test_builtins_missing_from_an_older_file_are_added():
    realm = import_realm(load("quickstarts-kc9-full-export-realm-b.json")).realm
    # Keycloak 9 had neither acr nor basic; they are added and linked like Keycloak's migrations.
    client = Client.objects.get(realm=realm, client_id="realm-b-client")
    default = set(client.scope_links.filter(default=True).values_list("client_scope__name", flat=True))
    assert {"acr", "basic", "profile"} <= default
    account = Client.objects.get(realm=realm, client_id="account")
    assert Role.objects.filter(client=account, name__in=["view-groups", "delete-account"]).count() == 2
    # Old-style default roles (realm list plus the account client's list) become defaultRole.
    assert {str(r) for r in realm.default_role.composites.all()} == {
        "offline_access", "uma_authorization", "account:view-profile", "account:manage-account"}
    sa = User.objects.get(realm=realm, username="service-account-realm-b-client")
    assert sa.service_account_client == client


def _strip_ids(value):
    """Ids change when the same file is imported twice beside itself; names carry the links. (A
    secret's kid too: a key id is the key's in one realm only.)"""
    if isinstance(value, dict):
        return {k: _strip_ids(v) for k, v in value.items() if k not in ("id", "containerId", "parentId", "kid")}
    if isinstance(value, list):
        return [_strip_ids(v) for v in value]
    return value


@pytest.mark.parametrize("name", ["keycloak-testsuite-testrealm.json", "keycloak-fgap-realm-kc26-full-export.json",
                                  "quickstarts-saml-service-provider-realm.json"])
def test_export_import_round_trip_is_lossless(name):
    first = export_realm(import_realm(load(name)).realm)
    copy_data = copy.deepcopy(first)
    copy_data["realm"] = "copy-of-" + first["realm"]
    result = import_realm(copy_data)
    # Our export holds nothing we cannot read back; the only notes are that the copy's key,
    # being the same key as the original realm's, gets its own key id, and which flow steps
    # this server lacks.
    assert [w for w in result.warnings
            if "is taken by another realm" not in w and "is not available on this server" not in w] == []
    second = export_realm(result.realm)
    assert second["realm"] == copy_data["realm"]
    first["realm"] = second["realm"]
    assert _strip_ids(second) == _strip_ids(_with_ids_of(first, second))


def _ids_by_name(rep):
    ids = {f"user:{u['username']}": u["id"] for u in rep["users"]}
    ids.update({f"client:{c['clientId']}": c["id"] for c in rep["clients"]})
    groups = list(rep["groups"])
    while groups:
        group = groups.pop()
        ids[f"group:{group['path']}"] = group["id"]
        groups += group["subGroups"]
    return ids


def _with_ids_of(first, second):
    """``first`` with the ids of its users, clients and groups replaced by those of the same
    objects in ``second`` (admin permissions name them by id)."""
    text, theirs = json.dumps(first), _ids_by_name(second)
    for name, old in _ids_by_name(first).items():
        text = text.replace(old, theirs[name])
    return json.loads(text)


def test_export_is_keycloak_shaped():
    realm = import_realm(load("quickstarts-device-grant-realm.json")).realm
    rep = export_realm(realm)
    assert rep["realm"] == "device-grant" if realm.name == "device-grant" else rep["realm"] == realm.name
    client = next(c for c in rep["clients"] if c["clientId"] == "device-client")
    assert client["attributes"]["oauth2.device.authorization.grant.enabled"] == "true"
    assert client["defaultClientScopes"] == ["acr", "basic", "email", "profile", "roles", "web-origins"]
    assert rep["defaultRole"]["name"] == f"default-roles-{realm.name}"
    assert [s for s in rep["scopeMappings"] if s.get("clientScope") == "offline_access"] == [
        {"clientScope": "offline_access", "roles": ["offline_access"]}]
    key = rep["components"]["org.keycloak.keys.KeyProvider"][0]
    assert key["providerId"] == "rsa" and key["config"]["active"] == ["true"] and key["config"]["certificate"]
    assert {s["name"] for s in rep["clientScopes"]} >= {"profile", "email", "roles", "basic", "acr"}


def test_import_and_export_commands(tmp_path):
    src = INTEROP / "quickstarts-saml-service-provider-realm.json"
    out, err = io.StringIO(), io.StringIO()
    call_command("import_realm", str(src), stdout=out, stderr=err)
    lines = out.getvalue().splitlines()
    assert lines[-1] == "imported realm 'quickstart' (8 warning(s))"
    assert lines[0] == "warning: clients[0].protocolMappers[0].consentText: not supported, not imported"

    err = io.StringIO()
    with pytest.raises(SystemExit) as exc:
        call_command("import_realm", str(src), stdout=io.StringIO(), stderr=err)
    assert exc.value.code == 1
    assert err.getvalue() == (
        "import_realm: realm: realm 'quickstart' already exists (use override to replace it)\n")
    call_command("import_realm", str(src), "--override", stdout=io.StringIO(), stderr=io.StringIO())

    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    err = io.StringIO()
    with pytest.raises(SystemExit):
        call_command("import_realm", str(bad), stdout=io.StringIO(), stderr=err)
    assert err.getvalue().startswith(f"import_realm: {bad} is not valid JSON") and err.getvalue().count("\n") == 1

    out = io.StringIO()
    call_command("export_realm", "quickstart", stdout=out)
    assert json.loads(out.getvalue())["realm"] == "quickstart"
    target = tmp_path / "out.json"
    call_command("export_realm", "quickstart", "--file", str(target), stdout=io.StringIO(), stderr=io.StringIO())
    assert json.loads(target.read_text())["clients"]
    with pytest.raises(SystemExit):
        call_command("export_realm", "nope", stdout=io.StringIO(), stderr=io.StringIO())


def test_client_scope_mapping_on_scopes_and_cross_client_composites():
    realm = import_realm({
        "realm": "maps",
        "clients": [{"clientId": "api"}, {"clientId": "web", "fullScopeAllowed": False,
                                         "defaultClientScopes": ["profile", "api-scope"], "optionalClientScopes": []}],
        "clientScopes": [{"name": "api-scope", "protocol": "openid-connect",
                          "protocolMappers": [{"name": "aud", "protocolMapper": "oidc-audience-mapper",
                                               "config": {"included.client.audience": "api",
                                                          "access.token.claim": True}}]}],
        "roles": {"realm": [{"name": "staff", "composites": {"client": {"api": ["read"]}}}],
                  "client": {"api": [{"name": "read"}, {"name": "write", "composites": {"realm": ["staff"]}}]}},
        "scopeMappings": [{"clientScope": "api-scope", "roles": ["staff"]}],
        "clientScopeMappings": {"api": [{"clientScope": "api-scope", "roles": ["read"]},
                                        {"client": "web", "roles": ["write"]}]},
    }).realm
    scope = ClientScope.objects.get(realm=realm, name="api-scope")
    assert {str(r) for r in scope.scope_roles.all()} == {"staff", "api:read"}
    assert scope.protocol_mappers.get().config == {"included.client.audience": "api", "access.token.claim": "true"}
    web = Client.objects.get(realm=realm, client_id="web")
    assert {str(r) for r in web.scope_roles.all()} == {"api:write"}
    assert sorted(web.scope_links.values_list("client_scope__name", flat=True)) == ["api-scope", "profile"]
    write = Role.objects.get(client__client_id="api", client__realm=realm, name="write")
    from realms.models import expand_composites

    # write -> staff (client to realm) -> api:read (realm to client)
    assert {str(r) for r in expand_composites([write])} == {"api:write", "staff", "api:read"}


def test_ec_and_eddsa_keys_and_key_status_round_trip():
    from realms.data.keys import generate_key, rotate_key
    from realms.representation.services import create_realm

    realm = create_realm("keyring")
    rotate_key(realm)  # the first RS256 key goes passive, a new one signs
    generate_key(realm, "ES256", priority=50)
    generate_key(realm, "EdDSA", priority=40, status=RealmKey.DISABLED)
    rep = export_realm(realm)
    providers = sorted((c["providerId"], c["config"]["active"][0], c["config"]["enabled"][0])
                       for c in rep["components"]["org.keycloak.keys.KeyProvider"])
    assert providers == [("ecdsa-generated", "true", "true"), ("eddsa-generated", "false", "false"),
                         ("rsa", "false", "true"), ("rsa", "true", "true")]
    ec = next(c for c in rep["components"]["org.keycloak.keys.KeyProvider"] if c["providerId"] == "ecdsa-generated")
    assert ec["config"]["ecdsaEllipticCurveKey"] == ["P-256"] and ec["config"]["ecdsaPublicKey"]

    rep["realm"] = "keyring-copy"
    copy_realm = import_realm(rep).realm

    def public(r):
        return sorted((k.algorithm, k.status, k.priority, k.public_key_pem) for k in RealmKey.objects.filter(realm=r))

    assert public(copy_realm) == public(realm)
    assert realm_keys(copy_realm).signer("ES256") is not None
    disabled = RealmKey.objects.get(realm=copy_realm, algorithm="EdDSA")
    assert disabled.kid not in realm_keys(copy_realm).by_kid  # disabled keys neither sign nor verify


def test_keycloak_kid_and_generated_provider_without_material():
    data = load("quickstarts-kc9-full-export-realm-b.json")
    realm = import_realm(data).realm
    key = RealmKey.objects.get(realm=realm, provider_id="rsa-generated")
    from cryptography.hazmat.primitives import serialization

    spki = serialization.load_pem_public_key(key.public_key_pem.encode()).public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    # Keycloak's kid: base64url(SHA-256(SubjectPublicKeyInfo)), so its tokens keep verifying.
    assert key.kid == base64.urlsafe_b64encode(hashlib.sha256(spki).digest()).rstrip(b"=").decode()

    hand_written = {"realm": "gen", "components": {"org.keycloak.keys.KeyProvider": [
        {"name": "my-ec", "providerId": "ecdsa-generated", "config": {"priority": ["7"]}}]}}
    realm = import_realm(hand_written).realm
    key = RealmKey.objects.get(realm=realm)
    assert (key.algorithm, key.priority, key.provider_name) == ("ES256", 7, "my-ec")


def test_unsupported_keys_are_listed_with_their_paths():
    result = import_realm({
        "realm": "partial",
        "clients": [{"clientId": "app", "access": {"view": True}, "unknownThing": 1}],
        "users": [{"username": "u", "totp": False}],
        "groups": [{"name": "g", "path": "/g", "subGroups": [{"name": "h", "path": "/g/h", "parentId": "x",
                                                               "unknownThing": 1}]}],
        "components": {"org.keycloak.storage.UserStorageProvider": [{"providerId": "acme-store", "name": "corp"}]},
    })
    assert result.warnings == [
        "clients[0].unknownThing: not supported, not imported",
        "groups[0].subGroups[0].unknownThing: not supported, not imported",
        'components["org.keycloak.storage.UserStorageProvider"][0]: user storage provider \'acme-store\' is not '
        "available on this server: stored, its users cannot sign in until it is",
    ]
    assert Group.objects.get(realm=result.realm, name="h").parent.name == "g"
