"""The Admin REST API's realm resources (docs/decisions/0023): Keycloak's paths, parameters,
representations (the realm export's JSON), status codes and error bodies, the realm-management
role of each route, and an admin event with the caller for every write."""
import json
from urllib.parse import urlencode

import pytest
from django.test import Client

from realms.data import realm_cache
from realms.models import Client as ClientModel
from realms.models import Event, Group, Realm, Role, User, UserSession
from realms.representation import export_realm
from realms.representation.services import create_realm
from realms.sso.sessions import create_user_session
from realms.users.accounts import create_user
from tests.passwords import holds_password

pytestmark = pytest.mark.django_db

PASSWORD = "api-admin-password-1"
EXPORT_ONLY_USER_KEYS = {"credentials", "realmRoles", "clientRoles", "groups"}
EXPORT_ONLY_REALM_KEYS = {"roles", "groups", "users", "scopeMappings", "clientScopeMappings", "clients",
                          "clientScopes", "defaultDefaultClientScopes", "defaultOptionalClientScopes", "components",
                          "authenticationFlows", "authenticatorConfig", "requiredActions", "identityProviders",
                          "identityProviderMappers"}


def issue(realm, username, password=PASSWORD):
    """The token endpoint's answer to admin-cli's password grant."""
    resp = Client().post(f"/realms/{realm}/protocol/openid-connect/token", {
        "grant_type": "password", "client_id": "admin-cli", "username": username, "password": password})
    assert resp.status_code == 200, resp.content
    return resp.json()


def token(realm, username, password=PASSWORD):
    return issue(realm, username, password)["access_token"]


class Api:
    """A bearer client sending and reading JSON."""

    def __init__(self, access_token):
        self.client = Client(HTTP_AUTHORIZATION=f"Bearer {access_token}")

    def __call__(self, method, path, body=None, **params):
        url = path if path.startswith("/admin/") else f"/admin/realms/{path}"
        if params:
            url += "?" + urlencode(params)
        if method == "get":
            return self.client.get(url)
        data = json.dumps(body) if body is not None else ""
        return getattr(self.client, method)(url, data, content_type="application/json")


@pytest.fixture
def master_api():
    master = Realm.objects.get(name="master")
    user = create_user(master, "api-root", password=PASSWORD)
    user.roles.add(Role.objects.get(realm=master, client=None, name="admin"))
    return Api(token("master", "api-root"))


@pytest.fixture
def acme():
    realm_cache.clear()  # an "acme" of an earlier test (rolled back) may still be cached by name
    realm = create_realm("acme")
    realm.admin_events_enabled = realm.admin_events_details_enabled = True
    realm.save()
    return realm


def realm_admin(realm, username, *roles):
    """A user of ``realm`` holding the given ``realm-management`` roles, and their API client."""
    user = create_user(realm, username, password=PASSWORD)
    user.roles.add(*Role.objects.filter(realm=realm, client__client_id="realm-management", name__in=roles))
    return Api(token(realm.name, username))


def created_id(resp):
    assert resp.status_code == 201, resp.content
    return resp["Location"].rsplit("/", 1)[1]


# --- serverinfo and realms ---------------------------------------------------------------------

def test_serverinfo_has_what_admin_clients_read(master_api):
    resp = master_api("get", "/admin/serverinfo")
    assert resp.status_code == 200
    info = resp.json()
    assert info["systemInfo"]["version"].startswith("26.")
    assert {"profileInfo", "themes", "providers"} <= info.keys()
    assert {"openid-connect", "saml"} <= info["providers"]["login-protocol"]["providers"].keys()
    assert Client().get("/admin/serverinfo").status_code == 401


def test_serverinfo_is_for_admins_only(acme):
    assert realm_admin(acme, "helpdesk", "query-users")("get", "/admin/serverinfo").status_code == 200
    assert realm_admin(acme, "plain-user")("get", "/admin/serverinfo").json() == {"error": "HTTP 403 Forbidden"}


def test_realm_crud_as_keycloak(master_api):
    resp = master_api("post", "/admin/realms", {"realm": "made", "displayName": "Made", "enabled": True,
                                                 "users": [{"username": "alice"}]})
    assert resp.status_code == 201 and resp["Location"].endswith("/admin/realms/made")
    made = Realm.objects.get(name="made")
    assert User.objects.filter(realm=made, username="alice").exists()  # a POST is an import
    assert master_api("post", "/admin/realms", {"realm": "made"}).json() == {
        "errorMessage": "Conflict detected. See logs for details"}
    assert master_api("post", "/admin/realms", {"realm": "bad", "enabled": "maybe"}).status_code == 400

    rep = master_api("get", "made").json()
    export = export_realm(made)
    assert rep == {k: v for k, v in export.items() if k not in EXPORT_ONLY_REALM_KEYS}
    listed = master_api("get", "/admin/realms").json()
    assert {"master", "made"} <= {r["realm"] for r in listed}
    assert next(r for r in listed if r["realm"] == "made") == rep
    assert master_api("get", "/admin/realms", briefRepresentation="true").json()[0].keys() <= {
        "id", "realm", "displayName"}

    resp = master_api("put", "made", {"displayName": "Renamed", "accessTokenLifespan": 120, "otpPolicyDigits": 8})
    assert resp.status_code == 204, resp.content
    made.refresh_from_db()
    assert (made.display_name, made.access_token_lifespan, made.otp_policy["otpPolicyDigits"]) == ("Renamed", 120, 8)
    assert master_api("put", "made", {"accessTokenLifespan": "soon"}).json() == {
        "errorMessage": "accessTokenLifespan: expected an integer"}
    assert master_api("put", "made", {"realm": "master"}).status_code == 409

    assert master_api("delete", "master").json() == {"errorMessage": "Cannot delete master realm"}
    assert master_api("delete", "made").status_code == 204
    assert not Realm.objects.filter(name="made").exists()
    assert master_api("get", "made").json() == {"error": "Realm not found."}


def test_realm_update_is_an_admin_event_with_the_caller(master_api, acme):
    assert master_api("put", "acme", {"displayName": "ACME"}).status_code == 204
    event = Event.objects.get(realm=acme, kind=Event.ADMIN, resource_type="REALM")
    assert (event.type, event.client_id, event.user_id) == ("UPDATE", "admin-cli",
                                                           User.objects.get(username="api-root").pk)
    assert json.loads(event.representation)["displayName"] == "ACME"


def test_smtp_password_is_masked_and_kept(master_api, acme):
    acme.smtp_server = {"host": "mail", "password": "s3cret"}
    acme.save()
    rep = master_api("get", "acme").json()
    assert rep["smtpServer"] == {"host": "mail", "password": "**********"}
    assert master_api("put", "acme", {"smtpServer": rep["smtpServer"]}).status_code == 204
    acme.refresh_from_db()
    assert acme.smtp_server["password"] == "s3cret"


# --- users -------------------------------------------------------------------------------------

def test_user_crud_and_conflicts(master_api, acme):
    resp = master_api("post", "acme/users", {
        "username": "Alice", "email": "alice@example.org", "firstName": "Alice", "lastName": "Liddell",
        "enabled": True, "attributes": {"dept": ["r&d"]},
        "credentials": [{"type": "password", "value": "alice-pass-1", "temporary": False}]})
    user_id = created_id(resp)
    assert resp["Location"].endswith(f"/admin/realms/acme/users/{user_id}")
    assert master_api("post", "acme/users", {"username": "alice"}).json() == {
        "errorMessage": "User exists with same username"}
    assert master_api("post", "acme/users", {"username": "other", "email": "ALICE@example.org"}).json() == {
        "errorMessage": "User exists with same email"}
    assert master_api("post", "acme/users", {"username": "x", "email": "not-an-email"}).status_code == 400
    assert master_api("post", "acme/users", {"email": "e@example.org"}).json() == {
        "errorMessage": "error-user-attribute-required"}
    acme.registration_email_as_username = True
    acme.save()
    by_email = created_id(master_api("post", "acme/users", {"email": "E@example.org", "username": "ignored"}))
    assert User.objects.get(pk=by_email).username == "e@example.org"

    user = User.objects.get(pk=user_id)
    assert token("acme", "alice", "alice-pass-1")  # the credential was set
    assert user.roles.filter(pk=acme.default_role_id).exists()  # the realm's default role, as every new user
    rep = master_api("get", f"acme/users/{user_id}").json()
    export_user = next(u for u in export_realm(acme)["users"] if u["id"] == user_id)
    assert rep == {k: v for k, v in export_user.items() if k not in EXPORT_ONLY_USER_KEYS}
    assert rep["username"] == "alice" and rep["attributes"] == {"dept": ["r&d"]}

    assert master_api("put", f"acme/users/{user_id}", {"firstName": "Al", "enabled": False}).status_code == 204
    user.refresh_from_db()
    assert (user.first_name, user.enabled, user.email) == ("Al", False, "alice@example.org")
    assert master_api("put", f"acme/users/{user_id}", {"username": "bob"}).json() == {
        "errorMessage": "error-user-attribute-read-only"}

    assert master_api("delete", f"acme/users/{user_id}").status_code == 204
    assert master_api("get", f"acme/users/{user_id}").json() == {"error": "User not found"}
    ops = list(Event.objects.filter(realm=acme, kind=Event.ADMIN, resource_type="USER", resource_path__contains=user_id)
               .order_by("time").values_list("type", "resource_path"))
    assert ops == [("CREATE", f"users/{user_id}"), ("UPDATE", f"users/{user_id}"), ("DELETE", f"users/{user_id}")]


@pytest.fixture
def people(acme):
    rows = [("ann", "ann@corp.example", "Ann", "Archer", True, {"team": ["blue"]}),
            ("anna", "anna@home.example", "Anna", "Baker", True, {"team": ["red"]}),
            ("bob", "bob@corp.example", "Bob", "Annson", False, {}),
            ("carol", "carol@corp.example", "Carol", "Ng", True, {"team": ["blue", "red"]})]
    for username, email, first, last, enabled, attrs in rows:
        create_user(acme, username, email=email, first_name=first, last_name=last, enabled=enabled,
                    attributes=attrs)
    return acme


@pytest.mark.parametrize("params,expected", [
    ({}, ["ann", "anna", "bob", "carol"]),
    ({"search": "ann"}, ["ann", "anna", "bob"]),  # prefix of username, email, first or last name
    ({"search": "*corp*"}, ["ann", "bob", "carol"]),  # infix
    ({"search": '"ann"'}, ["ann"]),  # exact
    ({"search": "ann archer"}, ["ann"]),  # every term must match
    ({"username": "nn"}, ["ann", "anna"]),  # infix when not exact
    ({"username": "ann", "exact": "true"}, ["ann"]),
    ({"email": "corp.example"}, ["ann", "bob", "carol"]),
    ({"firstName": "ann", "exact": "true"}, ["ann"]),
    ({"lastName": "baker"}, ["anna"]),
    ({"enabled": "false"}, ["bob"]),
    ({"q": "team:blue"}, ["ann", "carol"]),
    ({"q": "team:blue team:red"}, ["carol"]),
    ({"first": "1", "max": "2"}, ["anna", "bob"]),
    ({"search": "id:nope"}, []),
])
def test_user_search_parameters(master_api, people, params, expected):
    resp = master_api("get", "acme/users", **params)
    assert resp.status_code == 200, resp.content
    assert [u["username"] for u in resp.json()] == expected
    count_params = {k: v for k, v in params.items() if k not in ("first", "max")}
    count_expected = len(expected) if "max" not in params else 4
    assert master_api("get", "acme/users/count", **count_params).json() == count_expected


def test_brief_representation_and_bad_parameters(master_api, people):
    brief = master_api("get", "acme/users", briefRepresentation="true", username="ann", exact="true").json()[0]
    assert "attributes" not in brief and brief["username"] == "ann"
    full = master_api("get", "acme/users", username="ann", exact="true").json()[0]
    assert full["attributes"] == {"team": ["blue"]}
    assert master_api("get", "acme/users", first="x").json() == {"errorMessage": "Invalid value for first"}
    assert master_api("get", "acme/users", q="nocolon").status_code == 400


def test_reset_password(master_api, acme):
    user = create_user(acme, "dana", password="old-pass-1")
    path = f"acme/users/{user.pk}/reset-password"
    assert master_api("put", path, {"type": "password", "value": "new-pass-1", "temporary": True}).status_code == 204
    user.refresh_from_db()
    assert holds_password(user, "new-pass-1") and user.required_actions == ["UPDATE_PASSWORD"]
    assert master_api("put", path, {"type": "password", "value": "new-pass-2", "temporary": False}).status_code == 204
    user.refresh_from_db()
    assert holds_password(user, "new-pass-2") and user.required_actions == []
    assert master_api("put", path, {"type": "password"}).json() == {"errorMessage": "No password provided"}
    assert master_api("put", path, {"type": "password", "value": "  "}).json() == {"errorMessage": "Empty password"}
    event = Event.objects.filter(realm=acme, kind=Event.ADMIN, resource_path=f"users/{user.pk}/reset-password").first()
    assert event.type == "ACTION" and "new-pass" not in event.representation


def test_passwords_set_through_the_api_meet_the_realm_policy(master_api, acme):
    acme.password_policy = "length(12) and digits(2)"
    acme.save()
    user = create_user(acme, "hal")
    path = f"acme/users/{user.pk}/reset-password"
    refused = master_api("put", path, {"type": "password", "value": "abc"})
    assert refused.status_code == 400 and refused.json() == {
        "error": "invalidPasswordMinLengthMessage", "error_description": "Invalid password: minimum length 12."}
    user.refresh_from_db()
    assert not user.has_usable_password()
    assert master_api("put", path, {"type": "password", "value": "long enough 12"}).status_code == 204
    created = master_api("post", "acme/users", {"username": "ida", "credentials": [
        {"type": "password", "value": "short1"}]})
    assert created.status_code == 400 and created.json() == {"errorMessage": "Password policy not met"}
    assert not User.objects.filter(realm=acme, username="ida").exists()


def test_groups_of_a_user(master_api, acme):
    user = create_user(acme, "erin")
    staff = Group.objects.create(realm=acme, name="staff")
    sub = Group.objects.create(realm=acme, name="ops", parent=staff)
    assert master_api("put", f"acme/users/{user.pk}/groups/{sub.pk}").status_code == 204
    groups = master_api("get", f"acme/users/{user.pk}/groups").json()
    assert [(g["id"], g["path"], g["parentId"]) for g in groups] == [(sub.pk, "/staff/ops", staff.pk)]
    assert master_api("get", f"acme/users/{user.pk}/groups/count").json() == {"count": 1}
    assert master_api("put", f"acme/users/{user.pk}/groups/nope").json() == {"error": "Group not found"}
    assert master_api("delete", f"acme/users/{user.pk}/groups/{sub.pk}").status_code == 204
    assert master_api("get", f"acme/users/{user.pk}/groups").json() == []
    created = created_id(master_api("post", "acme/users", {"username": "fay", "groups": ["/staff/ops"]}))
    assert list(User.objects.get(pk=created).groups.all()) == [sub]
    assert master_api("post", "acme/users", {"username": "gil", "groups": ["/none"]}).json() == {
        "errorMessage": "Group /none not found"}
    assert set(Event.objects.filter(realm=acme, resource_type="GROUP_MEMBERSHIP").values_list("type", flat=True)) == {
        "CREATE", "DELETE"}


def test_role_mappings_realm_and_client(master_api, acme):
    user = create_user(acme, "hal")
    boss = Role.objects.create(realm=acme, name="boss")
    worker = Role.objects.create(realm=acme, name="worker")
    boss.composites.add(worker)
    base = f"acme/users/{user.pk}/role-mappings"
    assert master_api("post", f"{base}/realm", [{"name": "boss"}]).status_code == 204
    assert [r["name"] for r in master_api("get", f"{base}/realm").json()] == ["boss", "default-roles-acme"]
    composite = [r["name"] for r in master_api("get", f"{base}/realm/composite").json()]
    assert {"boss", "worker", "offline_access"} <= set(composite)
    available = [r["name"] for r in master_api("get", f"{base}/realm/available").json()]
    # Keycloak offers every role not mapped directly, those held through a composite too
    assert "boss" not in available and "worker" in available
    mapped = master_api("get", base).json()
    assert {r["name"] for r in mapped["realmMappings"]} == {"boss", "default-roles-acme"}
    assert mapped["realmMappings"][0].keys() == {"id", "name", "description", "composite", "clientRole",
                                                 "containerId"}
    assert master_api("post", f"{base}/realm", [{"name": "nope"}]).json() == {"error": "Role not found"}

    app = ClientModel.objects.get(realm=acme, client_id="realm-management")
    assert master_api("post", f"{base}/clients/{app.pk}", [{"name": "view-users"}]).status_code == 204
    assert [r["name"] for r in master_api("get", f"{base}/clients/{app.pk}").json()] == ["view-users"]
    assert {"query-users", "view-users"} <= {
        r["name"] for r in master_api("get", f"{base}/clients/{app.pk}/composite").json()}
    assert master_api("get", base).json()["clientMappings"]["realm-management"]["id"] == app.pk
    assert master_api("delete", f"{base}/realm", [{"name": "boss"}]).status_code == 204
    assert not user.roles.filter(pk=boss.pk).exists()
    assert list(Event.objects.filter(realm=acme, resource_type__endswith="ROLE_MAPPING").order_by("time")
                .values_list("type", "resource_type")) == [
        ("CREATE", "REALM_ROLE_MAPPING"), ("CREATE", "CLIENT_ROLE_MAPPING"), ("DELETE", "REALM_ROLE_MAPPING")]


def test_sessions_and_logout(master_api, acme):
    user = create_user(acme, "ivy")
    session = create_user_session(acme, user, ip_address="192.0.2.9")
    listed = master_api("get", f"acme/users/{user.pk}/sessions").json()
    assert [(s["id"], s["userId"], s["ipAddress"], s["username"]) for s in listed] == [
        (session.pk, user.pk, "192.0.2.9", "ivy")]
    assert master_api("post", f"acme/users/{user.pk}/logout").status_code == 204
    assert not UserSession.objects.filter(user=user).exists()
    assert master_api("get", f"acme/users/{user.pk}/sessions").json() == []


# --- roles -------------------------------------------------------------------------------------

def test_realm_roles_crud_composites_users_and_by_id(master_api, acme):
    resp = master_api("post", "acme/roles", {"name": "auditor", "description": "reads", "attributes": {"a": ["1"]}})
    assert resp.status_code == 201 and resp["Location"].endswith("/admin/realms/acme/roles/auditor")
    assert master_api("post", "acme/roles", {"name": "auditor"}).json() == {
        "errorMessage": "Role with name auditor already exists"}
    role = Role.objects.get(realm=acme, client=None, name="auditor")
    rep = master_api("get", "acme/roles/auditor").json()
    assert rep == next(r for r in export_realm(acme)["roles"]["realm"] if r["name"] == "auditor")
    assert master_api("get", f"acme/roles-by-id/{role.pk}").json() == rep
    assert "auditor" in [r["name"] for r in master_api("get", "acme/roles").json()]

    assert master_api("post", "acme/roles/auditor/composites", [{"name": "offline_access"}]).status_code == 204
    assert [r["name"] for r in master_api("get", "acme/roles/auditor/composites").json()] == ["offline_access"]
    user = create_user(acme, "jo")
    user.roles.add(role)
    assert [u["username"] for u in master_api("get", "acme/roles/auditor/users").json()] == ["jo"]
    assert master_api("put", "acme/roles/auditor", {"description": "reads all"}).status_code == 204
    role.refresh_from_db()
    assert role.description == "reads all"
    assert master_api("get", "acme/roles/none").json() == {"error": "Could not find role"}
    assert master_api("delete", "acme/roles/default-roles-acme").status_code == 400
    assert master_api("delete", "acme/roles/auditor").status_code == 204
    assert not Role.objects.filter(pk=role.pk).exists()


def test_client_roles(master_api, acme):
    app = ClientModel.objects.get(realm=acme, client_id="account")
    assert master_api("post", f"acme/clients/{app.pk}/roles", {"name": "reader"}).status_code == 201
    rep = master_api("get", f"acme/clients/{app.pk}/roles/reader").json()
    assert rep["clientRole"] is True and rep["containerId"] == app.pk
    assert rep == next(r for r in export_realm(acme)["roles"]["client"]["account"] if r["name"] == "reader")
    assert master_api("get", "acme/clients/nope/roles").json() == {"error": "Could not find client"}


# --- groups ------------------------------------------------------------------------------------

def test_group_tree_children_members_and_role_mappings(master_api, acme):
    staff_id = created_id(master_api("post", "acme/groups", {"name": "staff", "attributes": {"site": ["x"]}}))
    assert master_api("post", "acme/groups", {"description": "no name"}).json() == {
        "errorMessage": "Group name is missing"}
    assert master_api("post", "acme/groups", {"name": "staff"}).json() == {
        "errorMessage": "Top level group named 'staff' already exists."}
    resp = master_api("post", f"acme/groups/{staff_id}/children", {"name": "ops"})
    ops_id = created_id(resp)
    assert resp.json()["path"] == "/staff/ops"
    assert master_api("post", f"acme/groups/{staff_id}/children", {"name": "ops"}).json() == {
        "errorMessage": "Sibling group named 'ops' already exists."}
    created_id(master_api("post", "acme/groups", {"name": "sales"}))

    top = master_api("get", "acme/groups").json()
    assert [(g["name"], g["subGroupCount"], g["subGroups"]) for g in top] == [("sales", 0, []), ("staff", 1, [])]
    found = master_api("get", "acme/groups", search="op").json()
    assert [(g["name"], [c["name"] for c in g["subGroups"]]) for g in found] == [("staff", ["ops"])]
    assert master_api("get", "acme/groups/count").json() == {"count": 3}
    assert master_api("get", "acme/groups/count", top="true").json() == {"count": 2}
    assert [g["name"] for g in master_api("get", f"acme/groups/{staff_id}/children").json()] == ["ops"]

    staff = Group.objects.get(pk=staff_id)
    rep = master_api("get", f"acme/groups/{staff_id}").json()
    export_group = next(g for g in export_realm(acme)["groups"] if g["name"] == "staff")
    assert rep == {**export_group, "subGroups": [], "subGroupCount": 1}
    assert master_api("put", f"acme/groups/{staff_id}", {"name": "team"}).status_code == 204
    staff.refresh_from_db()
    assert staff.name == "team" and staff.attributes == {"site": ["x"]}

    user = create_user(acme, "lou")
    assert master_api("put", f"acme/users/{user.pk}/groups/{ops_id}").status_code == 204
    assert [u["username"] for u in master_api("get", f"acme/groups/{ops_id}/members").json()] == ["lou"]

    Role.objects.create(realm=acme, name="ops-role")
    assert master_api("post", f"acme/groups/{staff_id}/role-mappings/realm", [{"name": "ops-role"}]).status_code == 204
    assert [r["name"] for r in master_api("get", f"acme/groups/{staff_id}/role-mappings/realm").json()] == ["ops-role"]
    # a subgroup's effective roles include its parent's, and so do its members'
    assert "ops-role" in [r["name"] for r in master_api("get", f"acme/groups/{ops_id}/role-mappings/realm/composite").json()]
    assert "ops-role" in [r["name"] for r in master_api("get", f"acme/users/{user.pk}/role-mappings/realm/composite").json()]

    sales = Group.objects.get(realm=acme, name="sales")
    assert master_api("post", f"acme/groups/{sales.pk}/children", {"id": ops_id, "name": "ops"}).status_code == 204
    assert Group.objects.get(pk=ops_id).path == "/sales/ops"
    assert master_api("post", f"acme/groups/{ops_id}/children", {"id": sales.pk, "name": "sales"}).status_code == 409
    assert master_api("delete", f"acme/groups/{staff_id}").status_code == 204
    assert master_api("get", f"acme/groups/{staff_id}").json() == {"error": "Could not find group by id"}
    assert set(Event.objects.filter(realm=acme, resource_type="GROUP").values_list("type", flat=True)) == {
        "CREATE", "UPDATE", "DELETE"}


# --- clients -----------------------------------------------------------------------------------

def test_client_crud_secret_and_service_account(master_api, acme):
    resp = master_api("post", "acme/clients", {"clientId": "backend", "publicClient": False,
                                               "serviceAccountsEnabled": True, "redirectUris": ["https://b/cb"]})
    client_id = created_id(resp)
    assert master_api("post", "acme/clients", {"clientId": "backend"}).json() == {
        "errorMessage": "Client backend already exists"}
    client = ClientModel.objects.get(pk=client_id)
    rep = master_api("get", f"acme/clients/{client_id}").json()
    assert rep == next(c for c in export_realm(acme)["clients"] if c["clientId"] == "backend")
    assert "profile" in rep["defaultClientScopes"]  # the realm's default scopes, as every new client
    assert [c["clientId"] for c in master_api("get", "acme/clients", clientId="backend").json()] == ["backend"]
    assert [c["clientId"] for c in master_api("get", "acme/clients", clientId="back", search="true").json()] == [
        "backend"]

    secret = master_api("get", f"acme/clients/{client_id}/client-secret").json()
    assert secret == {"type": "secret", "value": client.get_secret()}
    fresh = master_api("post", f"acme/clients/{client_id}/client-secret").json()
    client.refresh_from_db()
    assert fresh["value"] != secret["value"] and client.check_secret(fresh["value"])
    sa = master_api("get", f"acme/clients/{client_id}/service-account-user").json()
    assert sa["username"] == "service-account-backend"
    # Lists and searches leave service accounts out; a lookup by username finds them (Keycloak).
    assert "service-account-backend" not in [u["username"] for u in master_api("get", "acme/users").json()]
    assert master_api("get", "acme/users", search="service-account").json() == []
    assert [u["id"] for u in master_api("get", "acme/users", username="service-account-backend",
                                        exact="true").json()] == [sa["id"]]

    assert master_api("put", f"acme/clients/{client_id}", {"description": "the API", "enabled": False}).status_code == 204
    client.refresh_from_db()
    assert (client.description, client.enabled, client.client_id) == ("the API", False, "backend")
    events = Event.objects.filter(realm=acme, resource_type="CLIENT")
    assert all(fresh["value"] not in e.representation and secret["value"] not in e.representation for e in events)
    assert master_api("delete", f"acme/clients/{client_id}").status_code == 204
    assert master_api("get", f"acme/clients/{client_id}").json() == {"error": "Could not find client"}

    public = created_id(master_api("post", "acme/clients", {"clientId": "spa", "publicClient": True}))
    assert master_api("get", f"acme/clients/{public}/client-secret").status_code == 400
    assert master_api("get", f"acme/clients/{public}/service-account-user").status_code == 400
    assert master_api("put", f"acme/clients/{public}", {"publicClient": False}).status_code == 204
    assert master_api("get", f"acme/clients/{public}/client-secret").json()["value"]  # confidential now: a secret


def test_query_clients_without_view_clients_sees_none(acme):
    """Keycloak 26.2 lists only the clients the caller may view (query-clients opens the list)."""
    api = realm_admin(acme, "lister", "query-clients")
    assert api("get", "acme/clients").json() == []
    assert len(realm_admin(acme, "viewer", "view-clients")("get", "acme/clients").json()) > 1


# --- who may call ------------------------------------------------------------------------------

# (method, path, body, the realm-management role Keycloak requires). Ids that do not exist: an
# allowed call answers 404 or 400 and changes nothing; a refused one answers 403 first.
def test_deleting_a_realm_needs_manage_realm(acme):
    assert realm_admin(acme, "viewer", "view-realm")("delete", "acme").status_code == 403
    assert realm_admin(acme, "manager", "manage-realm")("delete", "acme").status_code == 204
    assert not Realm.objects.filter(name="acme").exists()


def test_query_users_without_view_users_sees_no_one(acme):
    create_user(acme, "kim")
    api = realm_admin(acme, "querier", "query-users")
    assert api("get", "acme/users").json() == []
    assert api("get", "acme/users/count").json() == 0


def test_realms_listed_by_what_the_caller_may_do(acme):
    other = create_realm("other")
    victim = create_user(acme, "victim")
    api = realm_admin(other, "b-admin", "realm-admin")
    assert api("get", f"acme/users/{victim.pk}").status_code == 403  # every route: test_admin_permissions
    # a realm where the caller holds some role, but not view-realm: its name only
    assert realm_admin(acme, "only-users", "view-users")("get", "/admin/realms").json() == [{"realm": "acme"}]
    assert realm_admin(acme, "no-roles")("get", "/admin/realms").json() == {"error": "HTTP 403 Forbidden"}
    assert api("get", "other/users").status_code == 200
