"""The last gaps of fine-grained admin permissions v2 (docs/decisions/0045), on Keycloak's own
fgap export (delegated admins of the groups DE, UK and AT, who hold query-users, query-groups
and query-clients through the group DUA):

- a group's ``subGroupCount`` counts the subgroups the caller may list (Keycloak 26.2 counts
  them with the subgroup query, filtered as the lists are), in one query for the whole list;
- an id that does not exist answers as Keycloak's sub-resource locators do: 404 with Keycloak's
  message before any other check (groups and roles by id: to anyone; users, clients and client
  scopes: to whoever may list them, 403 to others so that they cannot probe for ids); so does a
  group path that does not exist (to anyone)."""
import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from realms.models import Client, ClientScope, Group, Role, User
from tests.realms.test_admin import select_options
from tests.realms.test_admin_console_pickers import sign_in
from tests.realms.test_admin_permission_lists import CLIENT, CONSOLE, FORBIDDEN, GROUP, fgap_realm
from tests.realms.test_admin_rest_api import Api, token

pytestmark = pytest.mark.django_db


def counts(resp):
    assert resp.status_code == 200, resp.content
    items = resp.json() if isinstance(resp.json(), list) else [resp.json()]
    return {g["name"]: g["subGroupCount"] for g in items}


def grant(realm, username, *roles):
    user = User.objects.get(realm=realm, username=username)
    user.roles.add(*Role.objects.filter(realm=realm, client__client_id="realm-management", name__in=roles))


def test_sub_group_count_counts_the_subgroups_the_caller_may_list():
    realm = fgap_realm(("DE admins view DE and DUA", "Groups", [GROUP["DE"], GROUP["DUA"], GROUP["DE-DUA"]],
                        ["view"], "Allow DE DUA"))
    api = Api(token("fgap", "de-dua-0"))
    # DUA holds AT-DUA, DE-DUA and UK-DUA; the DE admins may list DE-DUA only
    assert counts(api("get", "fgap/groups")) == {"DE": 0, "DUA": 1}
    assert counts(api("get", "fgap/groups", briefRepresentation="false")) == {"DE": 0, "DUA": 1}
    assert counts(api("get", f"fgap/groups/{GROUP['DUA']}")) == {"DUA": 1}
    assert counts(api("get", "fgap/group-by-path/DUA")) == {"DUA": 1}
    assert counts(api("get", f"fgap/groups/{GROUP['DUA']}/children")) == {"DE-DUA": 0}
    tree = api("get", "fgap/groups", search="DUA").json()
    assert [(g["name"], g["subGroupCount"], [s["name"] for s in g["subGroups"]]) for g in tree] == [
        ("DUA", 1, ["DE-DUA"])]
    # the UK admins list UK only (view-members): DUA's subgroups are none of theirs
    assert counts(Api(token("fgap", "uk-dua-0"))("get", "fgap/groups")) == {"UK": 0}
    # a realm-wide role counts every subgroup
    grant(realm, "de-dua-0", "view-users")
    api = Api(token("fgap", "de-dua-0"))
    assert counts(api("get", "fgap/groups")) == {"AT": 0, "DE": 0, "DUA": 3, "UK": 0}
    assert counts(api("get", f"fgap/groups/{GROUP['DUA']}")) == {"DUA": 3}
    user = User.objects.get(realm=realm, username="de-dua-0")
    assert counts(api("get", f"fgap/users/{user.pk}/groups")) == {"DE-DUA": 0}


def test_sub_group_counts_take_one_query_for_the_whole_list():
    realm = fgap_realm(("DE admins view every group", "Groups", [], ["view"], "Allow DE DUA"))
    api = Api(token("fgap", "de-dua-0"))

    def counting_queries():
        with CaptureQueriesContext(connection) as captured:
            assert api("get", "fgap/groups").status_code == 200
        return [q["sql"] for q in captured if "COUNT(" in q["sql"].upper()]

    assert len(counting_queries()) == 1
    for n in range(6):
        parent = Group.objects.create(realm=realm, name=f"extra-{n}")
        Group.objects.create(realm=realm, name="child", parent=parent)
    assert len(counting_queries()) == 1
    assert counts(api("get", "fgap/groups", search="extra-1"))["extra-1"] == 1


def missing(api, path):
    resp = api("get", path)
    return resp.status_code, resp.json()


def test_an_id_that_does_not_exist_answers_404_to_whoever_may_list_its_kind():
    """de-dua-0 holds query-users, query-groups and query-clients (through DUA), and no
    permission on every object of a type: Keycloak tells them that an id does not exist."""
    fgap_realm()
    api = Api(token("fgap", "de-dua-0"))
    assert missing(api, "fgap/users/nope") == (404, {"error": "User not found"})
    assert missing(api, "fgap/users/nope/role-mappings") == (404, {"error": "User not found"})
    assert missing(api, "fgap/groups/nope") == (404, {"error": "Could not find group by id"})
    assert missing(api, "fgap/groups/nope/members") == (404, {"error": "Could not find group by id"})
    assert missing(api, "fgap/group-by-path/nope") == (404, {"error": "Group path does not exist"})
    assert missing(api, "fgap/clients/nope") == (404, {"error": "Could not find client"})
    assert missing(api, "fgap/clients/nope/roles") == (404, {"error": "Could not find client"})
    assert missing(api, "fgap/client-scopes/nope") == (404, {"error": "Could not find client scope"})
    assert missing(api, "fgap/roles-by-id/nope") == (404, {"error": "Could not find role with id"})
    for method in ("put", "delete"):
        resp = api(method, "fgap/groups/nope", {} if method == "put" else None)
        assert (resp.status_code, resp.json()) == (404, {"error": "Could not find group by id"})
    # objects that exist stay refused where they may not view them
    cli = Client.objects.get(realm__name="fgap", client_id="admin-cli")
    assert missing(api, f"fgap/clients/{cli.pk}") == (403, FORBIDDEN)
    assert missing(api, f"fgap/groups/{GROUP['AT']}") == (403, FORBIDDEN)
    scope = ClientScope.objects.filter(realm__name="fgap").first()
    assert missing(api, f"fgap/client-scopes/{scope.pk}") == (403, FORBIDDEN)


def test_an_id_that_does_not_exist_is_not_told_to_whoever_may_not_list_its_kind():
    realm = fgap_realm()
    user = User.objects.get(realm=realm, username="uk-dua-0")
    user.groups.clear()  # no query role left
    grant(realm, "uk-dua-0", "view-events")
    api = Api(token("fgap", "uk-dua-0"))
    for path in ("users/nope", "users/nope/groups", "clients/nope", "clients/nope/roles", "client-scopes/nope"):
        assert missing(api, f"fgap/{path}") == (403, FORBIDDEN), path
    # groups (by id or path) and roles by id are looked up before any check, as in Keycloak
    assert missing(api, "fgap/groups/nope") == (404, {"error": "Could not find group by id"})
    assert missing(api, "fgap/group-by-path/DUA/nope") == (404, {"error": "Group path does not exist"})
    assert missing(api, "fgap/group-by-path/DUA/UK-DUA") == (403, FORBIDDEN)
    assert missing(api, "fgap/roles-by-id/nope") == (404, {"error": "Could not find role with id"})
    # organizations need manage-realm first, then the organization
    realm.organizations_enabled = True
    realm.save()
    assert missing(api, "fgap/organizations/nope") == (403, FORBIDDEN)
    grant(realm, "uk-dua-0", "manage-realm")
    api = Api(token("fgap", "uk-dua-0"))
    assert missing(api, "fgap/organizations/nope") == (404, {"errorMessage": "Organization not found."})


def test_a_permission_on_every_user_or_client_lets_its_holder_learn_that_an_id_does_not_exist():
    """Keycloak's canQuery (users) and canList (clients, client scopes): a query role, or view on
    every object of the type."""
    fgap_realm(("UK admins view every user", "Users", [], ["view"], "Allow UK DUA"),
               ("UK admins view every client", "Clients", [], ["view"], "Allow UK DUA"))
    Group.objects.get(pk=GROUP["DUA"]).roles.clear()  # no query role left to the DUA admins
    api = Api(token("fgap", "uk-dua-0"))
    assert missing(api, "fgap/users/nope") == (404, {"error": "User not found"})
    assert missing(api, "fgap/clients/nope") == (404, {"error": "Could not find client"})
    assert missing(api, "fgap/client-scopes/nope") == (404, {"error": "Could not find client scope"})
    assert missing(api, "fgap/groups/nope") == (404, {"error": "Could not find group by id"})


def test_a_realm_wide_admin_is_told_that_an_id_does_not_exist():
    realm = fgap_realm()
    grant(realm, "de-dua-0", "realm-admin")
    api = Api(token("fgap", "de-dua-0"))
    for path, message in (("users/nope", "User not found"), ("clients/nope", "Could not find client"),
                          ("client-scopes/nope", "Could not find client scope"),
                          ("groups/nope", "Could not find group by id"),
                          ("roles-by-id/nope", "Could not find role with id")):
        assert missing(api, f"fgap/{path}") == (404, {"error": message}), path
    assert api("get", f"fgap/groups/{GROUP['AT']}").status_code == 200
    assert json.loads(api("get", f"fgap/groups/{GROUP['DUA']}").content)["subGroupCount"] == 3


def test_the_roles_available_to_map_are_those_the_caller_may_map():
    """Keycloak's role-mappings ``available`` views offer the roles the caller may map
    (RolePermissions.canMapRole): a group's admin sees none of realm-management's roles."""
    superadmin = "1e9e453a-3534-427d-bcec-2f1da3301731"
    realm = fgap_realm()
    member = User.objects.get(realm=realm, username="de-user-1")
    management = Client.objects.get(realm=realm, client_id="realm-management")
    api = Api(token("fgap", "de-dua-0"))
    base = f"fgap/users/{member.pk}/role-mappings"
    assert api("get", f"{base}/realm/available").json() == []
    assert api("get", f"{base}/clients/{management.pk}/available").json() == []
    realm = fgap_realm(("DE admins map superadmin", "Roles", [superadmin], ["map-role"], "Allow DE DUA"))
    api = Api(token("fgap", "de-dua-0"))
    assert [r["name"] for r in api("get", f"{base}/realm/available").json()] == ["superadmin"]
    # a realm-wide admin is offered every role the user does not have yet
    grant(realm, "de-dua-0", "realm-admin")
    api = Api(token("fgap", "de-dua-0"))
    assert len(api("get", f"{base}/clients/{management.pk}/available").json()) == 19


def test_a_clients_map_roles_scope_lets_its_holder_map_that_clients_roles():
    """RolePermissionsV2.canMapRole: a client's role is mapped by whoever may map the client's
    roles (``map-roles`` on the client), in the Admin API and the console's pickers alike."""
    de_user_1 = "f8eca38f-e5c1-4c16-9417-fed056de2e67"
    realm = fgap_realm(("DE admins map account roles", "Clients", [CLIENT["account"]], ["map-roles"], "Allow DE DUA"),
                       ("DE admins map roles of de-user-1", "Users", [de_user_1], ["map-roles"], "Allow DE DUA"))
    user = User.objects.get(realm=realm, pk=de_user_1)
    account = Client.objects.get(realm=realm, client_id="account")
    api = Api(token("fgap", "de-dua-0"))
    base = f"fgap/users/{user.pk}/role-mappings/clients/{account.pk}"
    offered = [r["name"] for r in api("get", f"{base}/available").json()]
    direct = set(user.roles.filter(client=account).values_list("name", flat=True))
    assert offered and set(offered) == set(account.roles.values_list("name", flat=True)) - direct
    role = account.roles.get(name=offered[0])
    assert api("post", base, [{"id": role.pk, "name": role.name}]).status_code == 204
    assert user.roles.filter(pk=role.pk).exists()
    # not another client's roles
    broker = Client.objects.get(realm=realm, client_id="broker")
    assert api("get", f"fgap/users/{user.pk}/role-mappings/clients/{broker.pk}/available").json() == []
    read_token = broker.roles.get(name="read-token")
    resp = api("post", f"fgap/users/{user.pk}/role-mappings/clients/{broker.pk}", [{"id": read_token.pk}])
    assert (resp.status_code, resp.json()) == (403, FORBIDDEN)
    # the console's role picker offers the same roles
    page = sign_in("de-dua-0").get(f"{CONSOLE}realms/user/{user.pk}/change/").content.decode()
    assert set(select_options(page, "roles")) == set(account.roles.values_list("pk", flat=True))
