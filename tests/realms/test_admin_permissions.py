"""Who may administer what (realms.administration.admin_permissions, docs/decisions/0032): every route of the
Admin REST API against every realm-management role, generated from the route table so that a
route added by any app is covered; a realm-B admin sees nothing of realm A; fine-grained admin
permissions v2 of Keycloak's own fgap export limit a group's delegated admins to its members."""
import copy
import json
import re
from types import SimpleNamespace

import pytest
from django.db import transaction

from realms.admin_api import resources
from realms.admin_api.authentication import Caller
from realms.admin_api.permissions import RealmRole, required_role
from realms.admin_api.views import LOCATED, RealmResource
from realms.administration.admin_permissions import Admin, can
from realms.data import realm_cache
from realms.models import Client, Realm, Role, User
from realms.representation import RepresentationError, export_realm, import_realm
from realms.representation.services import create_realm
from realms.users import storage
from realms.users.accounts import create_user
from tests.realms.test_admin_rest_api import PASSWORD, Api, realm_admin, token
from tests.realms.test_import_export import load

pytestmark = pytest.mark.django_db

FGAP_FILE = "keycloak-fgap-realm-kc26-full-export.json"
METHODS = ("get", "post", "put", "delete")
# Keycloak's permission classes: a route's role is also held through these roles.
GRANTED_BY = {
    "view-realm": {"manage-realm"}, "view-events": {"manage-events"}, "view-users": {"manage-users"},
    "view-identity-providers": {"manage-identity-providers"}, "view-authorization": {"manage-authorization"},
    "query-users": {"view-users", "manage-users"}, "query-groups": {"view-users", "manage-users"},
    "view-clients": {"manage-clients"}, "query-clients": {"view-clients", "manage-clients"},
}


def routes(realm_name):
    """(method, path, role needed) of every registered realm resource; path arguments other
    than the realm name nothing that exists, so an allowed call answers 404 or 400, never 403."""
    found = []
    for pattern in resources.patterns():
        view_class = getattr(pattern.callback, "view_class", None)
        if view_class is None or not issubclass(view_class, RealmResource):
            continue
        route = str(pattern.pattern)
        kwargs = {name: ("realm" if name == "realm" else "nope") for name in re.findall(r"<\w+:(\w+)>", route)}
        path = re.sub(r"<\w+:(\w+)>", lambda m: realm_name if m.group(1) == "realm" else "nope", route)
        view = view_class(**pattern.callback.view_initkwargs)
        view.kwargs = kwargs
        for method in METHODS:
            if hasattr(view_class, method):
                found.append((method, path, required_role(view, method.upper())))
    # Last: deleting the realm; every call runs in a savepoint rolled back anyway.
    return sorted(found, key=lambda r: (r[1] == realm_name and r[0] == "delete", r[1], r[0]))


def call(api, method, path):
    """One request; a change is rolled back (and the realm cache forgotten) so the next call
    meets the same realm."""
    if method == "get":
        return api(method, path)
    with transaction.atomic():
        resp = api(method, path, {} if method in ("post", "put") else None)
        transaction.set_rollback(True)
    realm_cache.clear()
    return resp


def held(realm, role_name):
    """The role and its composites, from the realm's own realm-management client."""
    role = Role.objects.get(realm=realm, client__client_id="realm-management", name=role_name)
    names, frontier = {role.name}, [role]
    while frontier:
        frontier = [c for r in frontier for c in r.composites.all() if c.name not in names]
        names |= {c.name for c in frontier}
    return names


def test_generated_route_table_covers_every_resource():
    paths = {path for _, path, _ in routes("acme")}
    assert {"acme/users", "acme/users/nope", "acme/groups/nope/members", "acme/clients/nope/roles",
            "acme/events/config", "acme/organizations", "acme/organizations/nope/members/nope"} <= paths
    assert len(paths) > 80


def expected(has, needed):
    if isinstance(needed, tuple):  # any one of these roles
        return any(expected(has, one) for one in needed)
    return needed is not None and (needed in has or bool(GRANTED_BY.get(needed, set()) & has))


def test_permission_matrix_every_role_by_every_route():
    """Each of the 19 realm-management roles against each route and method, through the API's
    permission check (RealmRole) with the caller's roles from the database."""
    realm_cache.clear()
    acme = create_realm("acme")
    table = routes("acme")
    roles = sorted(r.name for r in Role.objects.filter(realm=acme, client__client_id="realm-management"))
    assert "realm-admin" in roles and len(roles) == 19
    check = RealmRole()
    for role in roles:
        user = create_user(acme, f"adm-{role}")
        user.roles.add(Role.objects.get(realm=acme, client__client_id="realm-management", name=role))
        caller, has = Caller(user=user, realm=acme, claims={"azp": "admin-cli"}), held(acme, role)
        for method, path, needed in table:
            view = _view(path)
            view.realm = acme
            request = SimpleNamespace(method=method.upper(), user=caller)
            assert check.has_permission(request, view) == expected(has, needed), (role, method, path, needed)


def _view(path):
    for pattern in resources.patterns():
        match = pattern.resolve(path)
        if match is not None:
            view = match.func.view_class(**match.func.view_initkwargs)
            view.kwargs = match.kwargs
            return view
    raise AssertionError(path)


def answered_before_roles(has, path):
    """Whether the object a path addresses by id (``users/nope/...``), not found, answers 404
    before the route's role is checked, as Keycloak's sub-resource locators do: to anyone for a
    group or a role by id, to whoever may list them for users, clients and client scopes."""
    segments = path.split("/")
    if len(segments) < 3 or segments[1] not in LOCATED or segments[2] != "nope":
        return None
    lister = LOCATED[segments[1]][2]
    return lister is None or expected(has, lister)


@pytest.mark.parametrize("role", ["realm-admin", "view-users"])
def test_permission_matrix_over_http(role):
    """The same answers through the API itself: 403 with Keycloak's body where not allowed; an
    id the path addresses is looked up first (``answered_before_roles``)."""
    realm_cache.clear()
    acme = create_realm("acme")
    api, has = realm_admin(acme, f"adm-{role}", role), held(acme, role)
    for method, path, needed in routes("acme"):
        resp = call(api, method, path)
        located = answered_before_roles(has, path)
        allowed = expected(has, needed) if located is None else located
        assert (resp.status_code != 403) == allowed, (role, method, path, needed, resp.status_code)
        if located:
            assert resp.status_code == 404, (role, method, path, resp.status_code)
        if resp.status_code == 403:
            assert resp.json() == {"error": "HTTP 403 Forbidden"}
    assert Realm.objects.filter(name="acme").exists()


def test_admin_of_realm_b_sees_nothing_of_realm_a():
    realm_cache.clear()
    acme, other = create_realm("acme"), create_realm("other")
    victim = create_user(acme, "victim")
    b_admin = create_user(other, "b-admin", password=PASSWORD)
    b_admin.roles.add(Role.objects.get(realm=other, client__client_id="realm-management", name="realm-admin"))
    caller, check = Caller(user=b_admin, realm=other, claims={"azp": "admin-cli"}), RealmRole()
    for method, path, _ in routes("acme"):
        view = _view(path)
        view.realm = acme
        assert not check.has_permission(SimpleNamespace(method=method.upper(), user=caller), view), (method, path)
    api = Api(token("other", "b-admin"))
    for method, path, _ in routes("acme"):
        if method == "get":
            assert api(method, path).status_code == 403, path
    assert api("get", f"acme/users/{victim.pk}").status_code == 403
    assert api("get", f"other/users/{victim.pk}").json() == {"error": "User not found"}
    assert [r["realm"] for r in api("get", "/admin/realms").json()] == ["other"]
    assert api("post", "/admin/realms", {"realm": "third"}).status_code == 403
    assert api("get", "other/users").status_code == 200


# --- fine-grained admin permissions v2 (Keycloak's fgap export) --------------------------------

def _with_passwords(realm):
    for user in User.objects.filter(realm=realm, service_account_client=None):
        storage.set_password(user.realm, user, PASSWORD)


@pytest.fixture
def fgap():
    realm_cache.clear()
    realm = import_realm(load(FGAP_FILE)).realm
    _with_passwords(realm)
    return realm


def users(realm, *names):
    found = {u.username: u for u in User.objects.filter(realm=realm, username__in=names)}
    return [found[n] for n in names]


def test_fgap_file_imports_its_permissions_and_exports_them_back(fgap):
    data = load(FGAP_FILE)
    assert fgap.admin_permissions_enabled
    client = Client.objects.get(realm=fgap, client_id="admin-permissions")
    given = next(c for c in data["clients"] if c["clientId"] == "admin-permissions")["authorizationSettings"]
    assert client.authorization_settings == given
    out = export_realm(fgap)
    assert out["adminPermissionsEnabled"] is True
    assert out["adminPermissionsClient"] == data["adminPermissionsClient"]
    assert next(c for c in out["clients"] if c["clientId"] == "admin-permissions")["authorizationSettings"] == given


def test_group_admin_is_limited_to_the_group_members(fgap):
    api = Api(token("fgap", "de-dua-0"))
    de0, de1, at0 = users(fgap, "de-user-0", "de-user-1", "at-user-0")
    listed = [u["username"] for u in api("get", "fgap/users").json()]
    assert listed == ["de-user-0", "de-user-1", "de-user-2"]
    assert api("get", "fgap/users/count").json() == 3
    assert [u["username"] for u in api("get", "fgap/users", search="*user-1").json()] == ["de-user-1"]
    assert api("get", f"fgap/users/{de0.pk}").json()["username"] == "de-user-0"
    assert api("get", f"fgap/users/{at0.pk}").status_code == 403
    assert api("put", f"fgap/users/{de1.pk}", {"firstName": "Delegated"}).status_code == 204
    assert User.objects.get(pk=de1.pk).first_name == "Delegated"
    assert api("put", f"fgap/users/{at0.pk}", {"firstName": "Nope"}).status_code == 403
    assert api("get", f"fgap/users/{de0.pk}/role-mappings").status_code == 200
    assert api("get", f"fgap/users/{at0.pk}/role-mappings").status_code == 403
    # manage does not include map-roles (scopes are independent, as Keycloak's)
    role = {"name": "offline_access"}
    assert api("post", f"fgap/users/{de0.pk}/role-mappings/realm", [role]).status_code == 403
    # the UK group's admins see the UK group's members only
    uk_api = Api(token("fgap", "uk-dua-1"))
    assert [u["username"] for u in uk_api("get", "fgap/users").json()] == ["uk-user-0", "uk-user-1", "uk-user-2"]
    assert uk_api("get", f"fgap/users/{de0.pk}").status_code == 403
    # a member of the groups with no delegated admin role sees no one
    assert Api(token("fgap", "at-user-0"))("get", "fgap/users").status_code == 403


def test_role_mapping_needs_map_roles_on_the_user_and_map_role_on_the_role():
    realm_cache.clear()
    data = load(FGAP_FILE)
    settings = next(c for c in data["clients"] if c["clientId"] == "admin-permissions")["authorizationSettings"]
    de0 = next(u for u in data["users"] if u["username"] == "de-user-0")
    settings["resources"].append({"name": de0["id"], "scopes": [{"name": "map-roles"}]})
    for kind, scope, names in (("Users", "map-roles", [de0["id"]]), ("Roles", "map-role", [])):
        settings["policies"].append({
            "name": f"DE DUA {scope}", "type": "scope", "logic": "POSITIVE", "decisionStrategy": "UNANIMOUS",
            "config": {"defaultResourceType": kind, "resources": json.dumps(names),
                       "scopes": json.dumps([scope]), "applyPolicies": '["Allow DE DUA"]'}})
    realm = import_realm(data).realm
    _with_passwords(realm)
    api = Api(token("fgap", "de-dua-0"))
    de0_user, de1 = users(realm, "de-user-0", "de-user-1")
    assert api("post", f"fgap/users/{de0_user.pk}/role-mappings/realm", [{"name": "offline_access"}]).status_code == 204
    assert de0_user.roles.filter(name="offline_access").exists()
    assert api("post", f"fgap/users/{de1.pk}/role-mappings/realm", [{"name": "offline_access"}]).status_code == 403
    # an administration role is handed out only by an admin holding it
    admin_role = {"name": "realm-admin"}
    assert api("post", f"fgap/users/{de0_user.pk}/role-mappings/clients/"
                       f"{Client.objects.get(realm=realm, client_id='realm-management').pk}",
               [admin_role]).status_code == 403


def test_the_realm_switch_turns_permissions_off(fgap):
    de0, = users(fgap, "de-user-0")
    api = Api(token("fgap", "de-dua-0"))
    assert api("get", f"fgap/users/{de0.pk}").status_code == 200
    fgap.admin_permissions_enabled = False
    fgap.save()
    assert api("get", f"fgap/users/{de0.pk}").status_code == 403
    assert api("get", "fgap/users").json() == []


def test_a_negative_policy_and_the_decision_strategies(fgap):
    de_admin, de0 = users(fgap, "de-dua-0", "de-user-0")
    admin = Admin(de_admin, "admin-cli")
    assert can(admin, fgap, ("Users", "view"), de0)
    assert not can(admin, fgap, ("Users", "view"))  # no permission on every user
    client = Client.objects.get(realm=fgap, client_id="admin-permissions")
    policies = client.authorization_settings["policies"]
    next(p for p in policies if p["name"] == "Allow DE DUA")["logic"] = "NEGATIVE"
    client.save()
    assert not can(Admin(de_admin, "admin-cli"), fgap, ("Users", "view"), de0)
    # a user permission of this admin beside the (now denying) group permission: UNANIMOUS denies,
    # AFFIRMATIVE grants
    policies.append({"name": "Me", "type": "user", "logic": "POSITIVE", "decisionStrategy": "UNANIMOUS",
                     "config": {"users": json.dumps([de_admin.username])}})
    policies.append({"name": "All users by me", "type": "scope", "decisionStrategy": "UNANIMOUS",
                     "config": {"defaultResourceType": "Users", "resources": "[]", "scopes": '["view"]',
                                "applyPolicies": '["Me"]'}})
    client.save()
    assert not can(Admin(de_admin, "admin-cli"), fgap, ("Users", "view"), de0)
    client.authorization_settings["decisionStrategy"] = "AFFIRMATIVE"
    client.save()
    assert can(Admin(de_admin, "admin-cli"), fgap, ("Users", "view"), de0)
    # client policy: only through the named client
    policies.append({"name": "Via cli", "type": "client", "config": {"clients": '["admin-cli"]'}})
    next(p for p in policies if p["name"] == "All users by me")["config"]["applyPolicies"] = '["Via cli"]'
    client.save()
    assert can(Admin(de_admin, "admin-cli"), fgap, ("Users", "view"), de0)
    assert not can(Admin(de_admin, "security-admin-console"), fgap, ("Users", "view"), de0)


def test_admin_permissions_under_another_client_are_an_applications_and_refused():
    """An application's settings are a resource server's (tests/authz): the admin-permissions
    schema is refused there rather than kept to mean nothing."""
    realm_cache.clear()
    data = copy.deepcopy(load(FGAP_FILE))
    i, client = next((i, c) for i, c in enumerate(data["clients"]) if c["clientId"] == "admin-permissions")
    client["clientId"] = "other-app"
    data["users"] = [u for u in data["users"] if u.get("serviceAccountClientId") != "admin-permissions"]
    data["roles"]["client"]["other-app"] = data["roles"]["client"].pop("admin-permissions")
    with pytest.raises(RepresentationError, match=re.escape(
            f"clients[{i}].authorizationSettings.authorizationSchema: the authorization schema is the "
            "admin-permissions client's only")):
        import_realm(data)


@pytest.mark.parametrize("change, message", [
    (lambda s, c: s["policies"].append({"name": "js", "type": "js", "config": {}}), "policy type 'js' is not supported"),
    (lambda s, c: s.update(policyEnforcementMode="PERMISSIVE"), "only ENFORCING is supported"),
    (lambda s, c: s["policies"][4]["config"].update(scopes='["fly"]'), "scope 'fly' is not a scope of Groups"),
    (lambda s, c: s["policies"][4]["config"].update(applyPolicies='["Nobody"]'), "unknown policy 'Nobody'"),
    (lambda s, c: s["policies"][0]["config"].update(groups='[{"path": "/Nope"}]'), "unknown group '/Nope'"),
])
def test_what_cannot_be_honoured_is_refused_at_import(change, message):
    data = copy.deepcopy(load(FGAP_FILE))
    client = next(c for c in data["clients"] if c["clientId"] == "admin-permissions")
    change(client["authorizationSettings"], client)
    with pytest.raises(RepresentationError, match=re.escape(message)):
        import_realm(data)
    assert not Realm.objects.filter(name="fgap").exists()


# --- delegated admins: the master realm's X-realm clients --------------------------------------

def test_master_users_administer_a_realm_through_its_master_client():
    realm_cache.clear()
    acme = create_realm("acme")
    create_realm("other")
    master = Realm.objects.get(name="master")
    client = Client.objects.get(realm=master, client_id="acme-realm")
    assert {r.name for r in client.roles.all()} == {r.name for r in Role.objects.filter(
        realm=acme, client__client_id="realm-management")}
    admin_role = Role.objects.get(realm=master, client=None, name="admin")
    assert set(client.roles.all()) <= set(admin_role.composites.all())

    helper = create_user(master, "acme-helpdesk", password=PASSWORD)
    helper.roles.add(client.roles.get(name="view-users"))
    victim = create_user(acme, "kim")
    api = Api(token("master", "acme-helpdesk"))
    assert api("get", "acme/users").json()[0]["username"] == "kim"
    assert api("get", f"acme/users/{victim.pk}").status_code == 200
    assert api("put", f"acme/users/{victim.pk}", {"firstName": "x"}).status_code == 403
    assert api("get", "other/users").status_code == 403
    assert api("get", "master/users").status_code == 403
    assert [r["realm"] for r in api("get", "/admin/realms").json()] == ["acme"]

    # renamed with the realm, removed with it
    root = create_user(master, "root", password=PASSWORD)
    root.roles.add(admin_role)
    root_api = Api(token("master", "root"))
    assert root_api("put", "acme", {"realm": "acme2"}).status_code == 204
    assert Client.objects.filter(realm=master, client_id="acme2-realm").exists()
    assert api("get", "acme2/users").status_code == 200
    assert root_api("delete", "acme2").status_code == 204
    assert not Client.objects.filter(realm=master, client_id__in=["acme-realm", "acme2-realm"]).exists()


def test_a_realm_creator_administers_the_realm_created():
    realm_cache.clear()
    master = Realm.objects.get(name="master")
    creator = create_user(master, "creator", password=PASSWORD)
    creator.roles.add(Role.objects.get(realm=master, client=None, name="create-realm"))
    api = Api(token("master", "creator"))
    assert api("post", "/admin/realms", {"realm": "made"}).status_code == 201
    assert api("get", "made").json()["realm"] == "made"
    assert api("post", "made/users", {"username": "ann"}).status_code == 201
    create_realm("not-mine")
    assert api("get", "not-mine").status_code == 403


def test_the_migration_gives_existing_realms_their_master_client():
    from importlib import import_module

    from django.apps import apps

    realm_cache.clear()
    create_realm("acme")
    Client.objects.filter(realm__name="master", client_id="acme-realm").delete()
    import_module("realms.migrations.0008_admin_permissions").add_delegated_clients(apps, None)
    client = Client.objects.get(realm__name="master", client_id="acme-realm")
    view_users = client.roles.get(name="view-users")
    assert {r.name for r in view_users.composites.all()} == {"query-users", "query-groups"}
    assert view_users in Role.objects.get(realm__name="master", client=None, name="admin").composites.all()
