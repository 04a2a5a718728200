"""Keycloak 26's rules for mapping roles through the Admin REST API (docs/decisions/0050):

- the ``available`` role-mapping and scope-mapping views list the roles not mapped directly
  (RoleMapperResource, ClientRoleMappingsResource, ScopeMappedResource): a role the owner has
  through a composite, a group or a parent group is still offered, narrowed to those the caller
  may map;
- ``map-role``, ``map-role-composite`` and ``map-role-client-scope`` are decided as
  RolePermissionsV2 decides them, by the role's container: a realm role goes into a composite or
  a client's scope by ``manage-realm``, a client role by ``manage-clients``; administration roles
  only by an admin who holds them (a realm admin, where fine-grained permissions are on); and
  each scope is enforced where the role is added (role mappings, composites, scope mappings);
- ``users/{id}/groups`` pages with ``first``/``max`` (all by default), ``search`` and
  ``briefRepresentation``, over the groups the caller may view; ``groups/count`` agrees."""
import json

import pytest

from realms.models import Client, Group, Role, User
from realms.users.accounts import create_user
from tests.realms.test_admin_permission_lists import CLIENT, FORBIDDEN, GROUP, fgap_realm
from tests.realms.test_admin_rest_api import Api, created_id, realm_admin, token

from .test_admin_rest_api import acme, master_api  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db

SUPERADMIN = "1e9e453a-3534-427d-bcec-2f1da3301731"  # a realm role of the fgap export


def names(resp):
    assert resp.status_code == 200, resp.content
    return [r["name"] for r in resp.json()]


def status(resp):
    return resp.status_code, (resp.json() if resp.content else None)


# --- available ---------------------------------------------------------------------------------

def test_available_role_mappings_of_a_user_are_the_roles_not_mapped_directly(master_api, acme):
    user = create_user(acme, "ivy")
    boss, worker, crew_role = (Role.objects.create(realm=acme, name=n) for n in ("boss", "worker", "crew-role"))
    boss.composites.add(worker)
    app = Client.objects.create(realm=acme, client_id="app")
    app_read, app_write = (Role.objects.create(realm=acme, client=app, name=n) for n in ("read", "write"))
    crew = Group.objects.create(realm=acme, name="crew")
    crew.roles.add(crew_role, app_read)
    user.groups.add(crew)
    user.roles.add(boss, app_write)
    base = f"acme/users/{user.pk}/role-mappings"
    realm_available = names(master_api("get", f"{base}/realm/available"))
    # held through the composite and through the group, not mapped directly: offered
    assert "worker" in realm_available and "crew-role" in realm_available and "boss" not in realm_available
    assert {"worker", "crew-role", "boss"} <= set(names(master_api("get", f"{base}/realm/composite")))
    assert names(master_api("get", f"{base}/clients/{app.pk}/available")) == ["read"]
    assert names(master_api("get", f"{base}/clients/{app.pk}/composite")) == ["read", "write"]


def test_available_role_mappings_of_a_group_include_its_parents_roles(master_api, acme):
    parent = Group.objects.create(realm=acme, name="parent")
    child = Group.objects.create(realm=acme, name="child", parent=parent)
    inherited, own = (Role.objects.create(realm=acme, name=n) for n in ("inherited", "own"))
    parent.roles.add(inherited)
    child.roles.add(own)
    base = f"acme/groups/{child.pk}/role-mappings/realm"
    assert "inherited" in names(master_api("get", f"{base}/composite"))
    available = names(master_api("get", f"{base}/available"))
    assert "inherited" in available and "own" not in available


def test_available_roles_are_narrowed_to_those_the_caller_may_map():
    """A role held through a composite is offered only to a caller who may map it."""
    realm = fgap_realm(("DE admins map superadmin", "Roles", [SUPERADMIN], ["map-role"], "Allow DE DUA"))
    member = User.objects.get(realm=realm, username="de-user-1")
    superadmin = Role.objects.get(pk=SUPERADMIN)
    default_roles = Role.objects.get(realm=realm, client=None, name="default-roles-fgap")
    default_roles.composites.add(superadmin)  # every user holds it now, none directly
    api = Api(token("fgap", "de-dua-0"))
    assert names(api("get", f"fgap/users/{member.pk}/role-mappings/realm/available")) == ["superadmin"]


# --- map-role-composite ------------------------------------------------------------------------

def test_composites_take_realm_roles_from_manage_realm_and_client_roles_from_manage_clients(acme):
    app = Client.objects.create(realm=acme, client_id="app")
    app_read = Role.objects.create(realm=acme, client=app, name="read")
    app_admin = Role.objects.create(realm=acme, client=app, name="admin")
    auditor, reader = (Role.objects.create(realm=acme, name=n) for n in ("auditor", "reader"))
    realm_side = realm_admin(acme, "realm-side", "manage-realm")
    assert realm_side("post", "acme/roles/auditor/composites", [{"id": reader.pk}]).status_code == 204
    assert status(realm_side("post", "acme/roles/auditor/composites", [{"id": app_read.pk}])) == (403, FORBIDDEN)
    client_side = realm_admin(acme, "client-side", "manage-clients")
    base = f"acme/clients/{app.pk}/roles/admin/composites"
    assert client_side("post", base, [{"id": app_read.pk}]).status_code == 204
    assert status(client_side("post", base, [{"id": reader.pk}])) == (403, FORBIDDEN)
    assert set(app_admin.composites.values_list("name", flat=True)) == {"read"}
    assert set(auditor.composites.values_list("name", flat=True)) == {"reader"}
    # removing needs the container's role alone (Keycloak's deleteComposites checks no scope)
    assert realm_side("delete", "acme/roles/auditor/composites", [{"id": reader.pk}]).status_code == 204


def test_an_administration_role_goes_into_a_composite_only_from_an_admin_who_holds_it(acme):
    Role.objects.create(realm=acme, name="helpdesk")
    app = Client.objects.create(realm=acme, client_id="app")
    Role.objects.create(realm=acme, client=app, name="ops")
    view_users = Role.objects.get(realm=acme, client__client_id="realm-management", name="view-users")
    without = realm_admin(acme, "without", "manage-clients")
    assert status(without("post", f"acme/clients/{app.pk}/roles/ops/composites", [{"id": view_users.pk}])) == (
        403, FORBIDDEN)
    holder = realm_admin(acme, "holder", "manage-clients", "view-users")
    assert holder("post", f"acme/clients/{app.pk}/roles/ops/composites", [{"id": view_users.pk}]).status_code == 204
    # where fine-grained permissions are on, only a realm admin hands administration roles out
    acme.admin_permissions_enabled = True
    acme.save()
    holder = Api(token("acme", "holder"))
    assert status(holder("post", f"acme/clients/{app.pk}/roles/ops/composites", [{"id": view_users.pk}])) == (
        403, FORBIDDEN)
    boss = realm_admin(acme, "boss", "realm-admin")
    assert boss("post", f"acme/clients/{app.pk}/roles/ops/composites", [{"id": view_users.pk}]).status_code == 204


def test_map_role_composite_permissions_on_a_role_or_on_its_client():
    """Under fine-grained permissions a composite takes a realm role with ``map-role-composite``
    on it, and a client role with that scope on it or ``map-roles-composite`` on its client."""
    realm = fgap_realm(("DE admins manage account", "Clients", [CLIENT["account"]], ["manage"], "Allow DE DUA"),
                       ("DE admins compose superadmin", "Roles", [SUPERADMIN], ["map-role-composite"], "Allow DE DUA"),
                       ("DE admins compose broker roles", "Clients", [CLIENT["broker"]], ["map-roles-composite"],
                        "Allow DE DUA"))
    api = Api(token("fgap", "de-dua-0"))
    base = f"fgap/clients/{CLIENT['account']}/roles/manage-account/composites"
    offline = Role.objects.get(realm=realm, client=None, name="offline_access")
    read_token = Role.objects.get(realm=realm, client__client_id="broker", name="read-token")
    view_profile = Role.objects.get(realm=realm, client__client_id="account", name="view-profile")
    assert api("post", base, [{"id": SUPERADMIN}]).status_code == 204
    assert api("post", base, [{"id": read_token.pk}]).status_code == 204
    assert status(api("post", base, [{"id": offline.pk}])) == (403, FORBIDDEN)
    assert status(api("post", base, [{"id": view_profile.pk}])) == (403, FORBIDDEN)


# --- map-role-client-scope ---------------------------------------------------------------------

@pytest.mark.parametrize("owner", ["clients", "client-scopes"])
def test_scope_mappings_take_realm_roles_from_manage_realm_and_client_roles_from_manage_clients(acme, owner):
    app = Client.objects.create(realm=acme, client_id="app", full_scope_allowed=False)
    api_client = Client.objects.create(realm=acme, client_id="api")
    read = Role.objects.create(realm=acme, client=api_client, name="read")
    reader = Role.objects.create(realm=acme, name="reader")
    owner_id = app.pk if owner == "clients" else created_id(realm_admin(acme, "maker", "manage-clients")(
        "post", "acme/client-scopes", {"name": "api"}))
    base = f"acme/{owner}/{owner_id}/scope-mappings"
    clients_only = realm_admin(acme, "clients-only", "manage-clients")
    assert "reader" not in names(clients_only("get", f"{base}/realm/available"))
    assert names(clients_only("get", f"{base}/clients/{api_client.pk}/available")) == ["read"]
    assert clients_only("post", f"{base}/clients/{api_client.pk}", [{"id": read.pk}]).status_code == 204
    assert status(clients_only("post", f"{base}/realm", [{"id": reader.pk}])) == (403, FORBIDDEN)
    both = realm_admin(acme, "both", "manage-clients", "manage-realm")
    assert "reader" in names(both("get", f"{base}/realm/available"))
    assert both("post", f"{base}/realm", [{"id": reader.pk}]).status_code == 204
    assert status(clients_only("delete", f"{base}/realm", [{"id": reader.pk}])) == (403, FORBIDDEN)
    assert both("delete", f"{base}/realm", [{"id": reader.pk}]).status_code == 204


def test_map_role_client_scope_permission_on_a_realm_role():
    realm = fgap_realm(("DE admins manage account", "Clients", [CLIENT["account"]], ["view", "manage"], "Allow DE DUA"),
                       ("DE admins scope superadmin", "Roles", [SUPERADMIN], ["map-role-client-scope"], "Allow DE DUA"))
    account = Client.objects.get(pk=CLIENT["account"])
    account.full_scope_allowed = False
    account.save()
    offline = Role.objects.get(realm=realm, client=None, name="offline_access")
    api = Api(token("fgap", "de-dua-0"))
    base = f"fgap/clients/{account.pk}/scope-mappings/realm"
    assert names(api("get", f"{base}/available")) == ["superadmin"]
    assert api("post", base, [{"id": SUPERADMIN}]).status_code == 204
    assert status(api("post", base, [{"id": offline.pk}])) == (403, FORBIDDEN)
    assert list(account.scope_roles.values_list("name", flat=True)) == ["superadmin"]


def test_map_role_is_the_same_rule_for_realm_and_client_roles(acme):
    user = create_user(acme, "jo")
    app = Client.objects.create(realm=acme, client_id="app")
    read = Role.objects.create(realm=acme, client=app, name="read")
    reader = Role.objects.create(realm=acme, name="reader")
    base = f"acme/users/{user.pk}/role-mappings"
    manager = realm_admin(acme, "manager", "manage-users")
    assert manager("post", f"{base}/realm", [{"id": reader.pk, "name": "reader"}]).status_code == 204
    assert manager("post", f"{base}/clients/{app.pk}", [{"id": read.pk, "name": "read"}]).status_code == 204
    # an administration role, realm-management's, only from an admin who holds it
    management = Client.objects.get(realm=acme, client_id="realm-management")
    view_events = management.roles.get(name="view-events")
    assert status(manager("post", f"{base}/clients/{management.pk}", [{"id": view_events.pk}])) == (403, FORBIDDEN)
    assert "view-events" not in names(manager("get", f"{base}/clients/{management.pk}/available"))
    # the query roles are handed out by any mapper (Keycloak's checkAdminRoles)
    assert "query-users" in names(manager("get", f"{base}/clients/{management.pk}/available"))


# --- users/{id}/groups -------------------------------------------------------------------------

def test_groups_of_a_user_page_search_and_count(master_api, acme):
    user = create_user(acme, "kim")
    groups = Group.objects.bulk_create([Group(realm=acme, name=f"team-{n:03}", attributes={"n": [str(n)]})
                                        for n in range(105)])
    user.groups.add(*groups, Group.objects.create(realm=acme, name="Alpha"))
    base = f"acme/users/{user.pk}/groups"
    everything = names(master_api("get", base))
    assert len(everything) == 106 and everything[:2] == ["Alpha", "team-000"]  # no default max
    assert names(master_api("get", base, first=1, max=2)) == ["team-000", "team-001"]
    assert names(master_api("get", base, search="ALP")) == ["Alpha"]
    assert names(master_api("get", base, search="team-10", first=2, max=10)) == ["team-102", "team-103",
                                                                                 "team-104"]
    assert master_api("get", f"{base}/count").json() == {"count": 106}
    assert master_api("get", f"{base}/count", search="team-10").json() == {"count": 5}
    brief = master_api("get", base, search="team-000").json()[0]
    assert "attributes" not in brief
    full = master_api("get", base, search="team-000", briefRepresentation="false").json()[0]
    assert full["attributes"] == {"n": ["0"]}
    assert master_api("get", base, max="x").status_code == 400


def test_groups_of_a_user_are_paged_among_those_the_caller_may_view():
    realm = fgap_realm()
    member = User.objects.get(realm=realm, username="de-user-1")  # in DE, whose members DE admins view
    alpha, beta, gamma = (Group.objects.create(realm=realm, name=n) for n in ("Alpha", "Beta", "Gamma"))
    member.groups.add(alpha, beta, gamma)
    permissions = Client.objects.get(realm=realm, client_id="admin-permissions")
    permissions.authorization_settings["policies"].append({
        "name": "DE admins view some groups", "type": "scope", "logic": "POSITIVE", "decisionStrategy": "UNANIMOUS",
        "config": {"defaultResourceType": "Groups", "resources": json.dumps([GROUP["DE"], beta.pk, gamma.pk]),
                   "scopes": '["view"]', "applyPolicies": '["Allow DE DUA"]'}})
    permissions.save()
    api = Api(token("fgap", "de-dua-0"))
    base = f"fgap/users/{member.pk}/groups"
    assert names(api("get", base)) == ["Beta", "DE", "Gamma"]
    # the page is of visible groups: Alpha, first by name, takes no room in it
    assert names(api("get", base, first=1, max=2)) == ["DE", "Gamma"]
    assert api("get", f"{base}/count").json() == {"count": 3}
    assert names(api("get", base, search="a")) == ["Beta", "Gamma"]
    assert api("get", f"{base}/count", search="a").json() == {"count": 2}
