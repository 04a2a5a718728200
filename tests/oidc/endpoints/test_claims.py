"""Token claims: roles restricted by the client's scope, protocol mappers, client scopes."""
from oidc.tokens import decode
from realms.models import ClientScope, Group, ProtocolMapper, Role

from .conftest import SECRET, basic, client_of, code_for, exchange, token_url


def tokens(http, realm, user, scope="openid"):
    code, _ = code_for(realm, user, scope=scope)
    resp = exchange(http, realm, code)
    assert resp.status_code == 200, resp.content
    issuer = f"http://testserver/realms/{realm.name}"
    body = resp.json()
    return decode(realm, body["access_token"], issuer), decode(realm, body["id_token"], issuer), body


def test_default_claims_with_full_scope(http, realm, alice):
    at, idt, _ = tokens(http, realm, alice)
    assert "reader" in at["realm_access"]["roles"] and "offline_access" in at["realm_access"]["roles"]
    assert at["resource_access"]["api"]["roles"] == ["read"]
    assert "api" in at["aud"]  # audience resolve: clients whose roles the token carries
    assert at["preferred_username"] == "alice" and at["email"] == "alice@example.org"
    assert at["email_verified"] is True and at["name"] == "Alice Liddell"
    assert at["allowed-origins"] == ["https://app.example"]
    assert at["acr"] == "1" and at["sub"] == alice.pk
    assert set(at["scope"].split()) == {"openid", "profile", "email"}
    assert "realm_access" not in idt and idt["email"] == "alice@example.org"


def test_roles_restricted_to_client_scope(http, realm, alice):
    app = client_of(realm, "app")
    app.full_scope_allowed = False
    app.save()
    app.scope_roles.add(Role.objects.get(realm=realm, client=None, name="reader"))
    at, _, _ = tokens(http, realm, alice)
    assert at["realm_access"]["roles"] == ["reader"]
    assert "resource_access" not in at  # api:read is not in the client's scope
    assert "aud" not in at


def test_scope_role_composites_are_expanded(http, realm, alice):
    app = client_of(realm, "app")
    app.full_scope_allowed = False
    app.save()
    umbrella = Role.objects.create(realm=realm, name="umbrella")
    umbrella.composites.add(Role.objects.get(realm=realm, client=None, name="reader"))
    app.scope_roles.add(umbrella)
    at, _, _ = tokens(http, realm, alice)
    assert at["realm_access"]["roles"] == ["reader"]  # umbrella itself is not held by alice


def test_client_scope_scope_roles_apply_when_scope_in_effect(http, realm, alice):
    app = client_of(realm, "app")
    app.full_scope_allowed = False
    app.save()
    # The built-in offline_access scope carries the offline_access role (optional scope).
    at, _, _ = tokens(http, realm, alice, scope="openid")
    assert "offline_access" not in at.get("realm_access", {}).get("roles", [])
    at, _, _ = tokens(http, realm, alice, scope="openid offline_access")
    assert "offline_access" in at["realm_access"]["roles"]


def add_mapper(realm, mapper_type, config, client_id="app"):
    return ProtocolMapper.objects.create(client=client_of(realm, client_id), name=mapper_type + str(len(config)),
                                         protocol_mapper=mapper_type, config=config)


def test_audience_mapper(http, realm, alice):
    add_mapper(realm, "oidc-audience-mapper", {"included.client.audience": "api", "access.token.claim": "true",
                                                "id.token.claim": "false"})
    add_mapper(realm, "oidc-audience-mapper", {"included.custom.audience": "https://orders.example",
                                                "access.token.claim": "true", "id.token.claim": "true", "x": "1"})
    at, idt, _ = tokens(http, realm, alice)
    assert set(at["aud"]) >= {"api", "https://orders.example"}
    assert set(idt["aud"]) == {"app", "https://orders.example"}


def test_attribute_hardcoded_property_group_mappers(http, realm, alice):
    add_mapper(realm, "oidc-usermodel-attribute-mapper", {
        "user.attribute": "team", "claim.name": "org.teams", "multivalued": "true", "access.token.claim": "true",
        "id.token.claim": "true", "jsonType.label": "String"})
    add_mapper(realm, "oidc-hardcoded-claim-mapper", {
        "claim.value": "42", "claim.name": "answer", "jsonType.label": "int", "access.token.claim": "true"})
    add_mapper(realm, "oidc-usermodel-property-mapper", {
        "user.attribute": "username", "claim.name": "login", "access.token.claim": "false", "id.token.claim": "true"})
    parent = Group.objects.create(realm=realm, name="staff")
    alice.groups.add(Group.objects.create(realm=realm, name="ops", parent=parent))
    add_mapper(realm, "oidc-group-membership-mapper", {"claim.name": "groups", "full.path": "true",
                                                        "access.token.claim": "true"})
    at, idt, _ = tokens(http, realm, alice)
    assert at["org"]["teams"] == ["blue", "green"] and idt["org"]["teams"] == ["blue", "green"]
    assert at["answer"] == 42
    assert "login" not in at and idt["login"] == "alice"
    assert at["groups"] == ["/staff/ops"]


def test_client_role_mapper_prefix_and_realm_role_mapper_prefix(http, realm, alice):
    roles = ClientScope.objects.get(realm=realm, name="roles")
    mapper = roles.protocol_mappers.get(protocol_mapper="oidc-usermodel-realm-role-mapper")
    mapper.config = {**mapper.config, "usermodel.realmRoleMapping.rolePrefix": "r:"}
    mapper.save()
    at, _, _ = tokens(http, realm, alice)
    assert "r:reader" in at["realm_access"]["roles"]


def test_mapper_change_is_seen_at_once(http, realm, alice):
    tokens(http, realm, alice)  # warms the cache
    add_mapper(realm, "oidc-hardcoded-claim-mapper", {"claim.value": "v", "claim.name": "fresh",
                                                       "access.token.claim": "true"})
    at, _, _ = tokens(http, realm, alice)
    assert at["fresh"] == "v"


def test_at_jwt_header_when_client_asks(http, realm, alice):
    from oidc import jose

    app = client_of(realm, "app")
    app.attributes = {**app.attributes, "access.token.header.type.rfc9068": "true"}
    app.save()
    _, _, body = tokens(http, realm, alice)
    header, _, _, _ = jose.parse(body["access_token"])
    assert header["typ"] == "at+jwt"


def test_client_credentials_roles_follow_role_changes(http, realm):
    from realms.models import User

    def roles():
        resp = http.post(token_url(realm), {"grant_type": "client_credentials"}, HTTP_AUTHORIZATION=basic("app", SECRET))
        at = decode(realm, resp.json()["access_token"], f"http://testserver/realms/{realm.name}")
        return at.get("realm_access", {}).get("roles", [])

    assert "writer" not in roles()
    account = User.objects.get(service_account_client__client_id="app")
    account.roles.add(Role.objects.get(realm=realm, client=None, name="writer"))
    assert "writer" in roles()


def test_session_state_claim_only_with_its_mapper(http, realm, alice):
    at, idt, body = tokens(http, realm, alice)
    # Keycloak 26: sid in the tokens, session_state only in the token response ...
    assert "session_state" not in at and "session_state" not in idt
    assert at["sid"] == idt["sid"] == body["session_state"]
    # ... unless the client adds the backwards-compatible mapper.
    add_mapper(realm, "oidc-session-state-mapper", {"access.token.claim": "true", "id.token.claim": "true"})
    at, idt, body = tokens(http, realm, alice)
    assert at["session_state"] == idt["session_state"] == at["sid"] == body["session_state"]

