"""create_realm and the master realm: Keycloak 26's built-ins, from one code path."""
import pytest

from realms.data import builtins
from realms.models import Client, ClientScope, ClientScopeLink, ProtocolMapper, Realm, RealmKey, Role, expand_composites
from realms.representation import RepresentationError
from realms.representation.services import add_default_client_scopes, create_realm
from realms.users.accounts import create_user, enable_service_account

pytestmark = pytest.mark.django_db


def scope_names(client, default):
    return sorted(ClientScopeLink.objects.filter(client=client, default=default).values_list("client_scope__name", flat=True))


def test_master_realm_exists_after_migrations():
    master = Realm.objects.get(name="master")
    names = set(Role.objects.filter(realm=master, client=None).values_list("name", flat=True))
    assert {"admin", "create-realm", "offline_access", "uma_authorization", "default-roles-master"} <= names
    admin = Role.objects.get(realm=master, client=None, name="admin")
    assert {r.name for r in expand_composites([admin])} == {"admin", "create-realm"}


def test_create_realm_gets_keycloak_builtins():
    realm = create_realm("acme", display_name="Acme", access_token_lifespan=120,
                         otp_policy={"otpPolicyDigits": 8})
    assert (realm.display_name, realm.access_token_lifespan, realm.otp_policy) == ("Acme", 120, {"otpPolicyDigits": 8})
    clients = {c.client_id: c for c in Client.objects.filter(realm=realm)}
    assert set(clients) == set(builtins.BUILTIN_CLIENT_IDS)

    admin_cli = clients["admin-cli"]
    assert admin_cli.public_client and admin_cli.direct_access_grants_enabled and not admin_cli.standard_flow_enabled
    for cid in ("account-console", "security-admin-console"):
        assert clients[cid].public_client and clients[cid].pkce_method == "S256"
    for cid in ("broker", "realm-management"):
        assert clients[cid].bearer_only
    assert clients["account"].redirect_uris == ["/realms/acme/account/*"]

    account_roles = set(Role.objects.filter(client=clients["account"]).values_list("name", flat=True))
    assert account_roles == {"view-profile", "manage-account", "manage-account-links", "view-applications",
                             "view-consent", "manage-consent", "delete-account", "view-groups"}
    manage = Role.objects.get(client=clients["account"], name="manage-account")
    assert {r.name for r in manage.composites.all()} == {"manage-account-links"}
    assert set(Role.objects.filter(client=clients["broker"]).values_list("name", flat=True)) == {"read-token"}
    realm_admin = Role.objects.get(client=clients["realm-management"], name="realm-admin")
    assert len(expand_composites([realm_admin])) == 19  # itself and the 18 management roles

    realm_roles = set(Role.objects.filter(realm=realm, client=None).values_list("name", flat=True))
    assert realm_roles == {"offline_access", "uma_authorization", "default-roles-acme"}
    assert realm.default_role.name == "default-roles-acme"
    assert {str(r) for r in realm.default_role.composites.all()} == {
        "offline_access", "uma_authorization", "account:view-profile", "account:manage-account"}

    assert set(ClientScope.objects.filter(realm=realm).values_list("name", flat=True)) == {
        "profile", "email", "roles", "web-origins", "offline_access", "address", "phone", "acr", "basic", "role_list",
        "organization"}
    assert scope_names(admin_cli, True) == ["acr", "basic", "email", "profile", "roles", "web-origins"]
    assert scope_names(admin_cli, False) == ["address", "offline_access", "organization", "phone"]
    offline = ClientScope.objects.get(realm=realm, name="offline_access")
    assert [r.name for r in offline.scope_roles.all()] == ["offline_access"]
    assert RealmKey.objects.filter(realm=realm, algorithm="RS256", status="active").count() == 1


def test_builtin_mappers_use_keycloak_types_and_config():
    realm = create_realm("mappers")
    roles = {m.name: m for m in ProtocolMapper.objects.filter(client_scope__realm=realm, client_scope__name="roles")}
    assert roles["realm roles"].protocol_mapper == "oidc-usermodel-realm-role-mapper"
    assert roles["realm roles"].config["claim.name"] == "realm_access.roles"
    assert roles["realm roles"].config["multivalued"] == "true"
    assert roles["realm roles"].config["access.token.claim"] == "true"
    assert roles["client roles"].config["claim.name"] == "resource_access.${client_id}.roles"
    assert roles["audience resolve"].protocol_mapper == "oidc-audience-resolve-mapper"
    basic = {m.name: m for m in ProtocolMapper.objects.filter(client_scope__realm=realm, client_scope__name="basic")}
    assert basic["sub"].protocol_mapper == "oidc-sub-mapper"
    assert basic["auth_time"].config["user.session.note"] == "AUTH_TIME"
    email = {m.name: m for m in ProtocolMapper.objects.filter(client_scope__realm=realm, client_scope__name="email")}
    assert email["email verified"].config["claim.name"] == "email_verified"
    profile = ProtocolMapper.objects.filter(client_scope__realm=realm, client_scope__name="profile")
    assert profile.count() == 14
    assert profile.get(name="username").config["claim.name"] == "preferred_username"


def test_create_realm_rejects_existing_and_unknown_fields():
    create_realm("twice")
    with pytest.raises(RepresentationError, match="already exists"):
        create_realm("twice")
    with pytest.raises(TypeError):
        create_realm("other", no_such_setting=1)


def test_new_client_and_user_helpers():
    realm = create_realm("helpers")
    client = Client.objects.create(realm=realm, client_id="app", service_accounts_enabled=True)
    add_default_client_scopes(client)
    assert scope_names(client, True) == ["acr", "basic", "email", "profile", "roles", "web-origins"]
    saml = Client.objects.create(realm=realm, client_id="urn:sp", protocol="saml")
    add_default_client_scopes(saml)
    assert scope_names(saml, True) == ["role_list"]
    user = create_user(realm, "Bob", email="bob@example.org")
    assert user.username == "bob" and list(user.roles.all()) == [realm.default_role]
    sa = enable_service_account(client)
    assert sa.username == "service-account-app" and enable_service_account(client) == sa
