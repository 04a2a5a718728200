"""Fine-grained admin permissions v2 narrow the lists of groups and clients (docs/decisions/0043):
the Admin REST API and the console list only what ``realms.administration.admin_permissions.visible`` lets the
caller list, filtered in the query so that ``first``/``max`` page the visible set; the count
agrees; a single object the caller may not view answers 403; a realm-wide role lists everything.
Built on Keycloak's own fgap export (delegated admins of the groups DE, UK and AT)."""
import json

import pytest
from django.test import Client as Browser

from realms.data import realm_cache
from realms.models import Client, Group, Realm, Role, User
from realms.representation import import_realm
from realms.users import storage
from tests.browser import console_sign_in
from tests.realms.test_admin_rest_api import PASSWORD, Api, token
from tests.realms.test_import_export import load

pytestmark = pytest.mark.django_db

FGAP_FILE = "keycloak-fgap-realm-kc26-full-export.json"
GROUP = {"AT": "2ebd7f6a-fdc8-484d-a1d0-5b00cdfe3aa6", "DE": "01628061-335b-45da-932d-10e9861581f5",
         "DUA": "0e267e53-749f-4a04-802d-3b806dc3cb76", "AT-DUA": "8dd52d49-d70f-47a8-b799-aec00104fde8",
         "DE-DUA": "16fa4dc9-55f7-4d07-9080-87cfee74c6f5", "UK-DUA": "922706c6-68af-47d8-9551-a32c92c858f8",
         "UK": "2ca5b429-4d90-4952-9412-fa1c1d857f2a"}
CLIENT = {"account": "c6e9a2e9-cade-4748-a81d-21dc075d6d0b", "broker": "c45e8514-ac85-44fc-af1e-62c5ba695404"}
FORBIDDEN = {"error": "HTTP 403 Forbidden"}
CONSOLE = "/admin/master/console/"


def fgap_realm(*permissions, policies=()):
    """The fgap export with more policies and scope permissions ``(name, type, ids, scopes,
    policy)`` (ids: objects of the type, or none for all of them); the named admins get passwords."""
    Realm.objects.filter(name="fgap").delete()
    realm_cache.clear()
    data = load(FGAP_FILE)
    settings = next(c for c in data["clients"] if c["clientId"] == "admin-permissions")["authorizationSettings"]
    settings["policies"] += list(policies)
    for name, kind, ids, scopes, policy in permissions:
        settings["resources"] += [{"name": i, "scopes": [{"name": s} for s in scopes]} for i in ids]
        settings["policies"].append({
            "name": name, "type": "scope", "logic": "POSITIVE", "decisionStrategy": "UNANIMOUS",
            "config": {"defaultResourceType": kind, "resources": json.dumps(ids), "scopes": json.dumps(scopes),
                       "applyPolicies": json.dumps([policy])}})
    realm = import_realm(data).realm
    for user in User.objects.filter(realm=realm, username__in=["de-dua-0", "uk-dua-0"]):
        storage.set_password(user.realm, user, PASSWORD)
    return realm


def names(resp, key="name"):
    assert resp.status_code == 200, resp.content
    return [item[key] for item in resp.json()]


def test_view_members_of_a_group_lists_that_group_only():
    """Keycloak's export as it is: the DE admins may view and manage the DE group's members.
    Keycloak's partial evaluation lists a group for ``view`` or ``view-members``; the group's own
    page needs ``view`` (GroupPermissionsV2.canView), which they do not have."""
    fgap_realm()
    api = Api(token("fgap", "de-dua-0"))
    assert names(api("get", "fgap/groups")) == ["DE"]
    assert api("get", "fgap/groups/count").json() == {"count": 1}
    assert names(api("get", "fgap/groups", search="E")) == ["DE"]  # DE-DUA matches, but is not listed
    assert api("get", f"fgap/groups/{GROUP['DE']}").status_code == 403
    resp = api("get", f"fgap/groups/{GROUP['AT']}")
    assert (resp.status_code, resp.json()) == (403, FORBIDDEN)
    assert names(Api(token("fgap", "uk-dua-0"))("get", "fgap/groups")) == ["UK"]


def test_group_admin_sees_and_pages_only_the_groups_they_may_view():
    fgap_realm(("DE admins view groups", "Groups", [GROUP["DE"], GROUP["UK"], GROUP["DUA"], GROUP["DE-DUA"]],
                ["view"], "Allow DE DUA"))
    api = Api(token("fgap", "de-dua-0"))
    assert names(api("get", "fgap/groups")) == ["DE", "DUA", "UK"]
    # first/max page the visible set (AT, the first top-level group, is not in it)
    assert names(api("get", "fgap/groups", first=0, max=1)) == ["DE"]
    assert names(api("get", "fgap/groups", first=1, max=2)) == ["DUA", "UK"]
    assert names(api("get", "fgap/groups", first=3, max=2)) == []
    assert api("get", "fgap/groups/count").json() == {"count": 4}
    assert api("get", "fgap/groups/count", top="true").json() == {"count": 3}
    assert api("get", "fgap/groups/count", search="DUA").json() == {"count": 2}
    # a search lists the visible hits, in the tree of their ancestors
    tree = api("get", "fgap/groups", search="DE-").json()
    assert [(g["name"], [s["name"] for s in g["subGroups"]]) for g in tree] == [("DUA", ["DE-DUA"])]
    assert names(api("get", f"fgap/groups/{GROUP['DUA']}/children")) == ["DE-DUA"]
    assert names(api("get", f"fgap/groups/{GROUP['DUA']}/children", first=1)) == []
    assert api("get", f"fgap/groups/{GROUP['DE']}").json()["name"] == "DE"
    assert api("get", f"fgap/groups/{GROUP['DE-DUA']}").json()["name"] == "DE-DUA"
    for other in ("AT", "AT-DUA"):
        resp = api("get", f"fgap/groups/{GROUP[other]}")
        assert (resp.status_code, resp.json()) == (403, FORBIDDEN)
    assert api("get", f"fgap/groups/{GROUP['AT']}/children").status_code == 403
    assert api("get", "fgap/group-by-path/DUA/DE-DUA").json()["id"] == GROUP["DE-DUA"]
    assert api("get", "fgap/group-by-path/DUA/AT-DUA").status_code == 403
    # others keep their own view
    assert names(Api(token("fgap", "uk-dua-0"))("get", "fgap/groups")) == ["UK"]


def test_a_permission_on_every_group_lists_all_but_the_groups_a_permission_denies():
    deny = {"name": "Deny DE DUA", "type": "group", "logic": "NEGATIVE", "decisionStrategy": "UNANIMOUS",
            "config": {"groups": json.dumps([{"path": "/DUA/DE-DUA", "extendChildren": False}])}}
    fgap_realm(("DE admins view every group", "Groups", [], ["view"], "Allow DE DUA"),
               ("But not AT", "Groups", [GROUP["AT"]], ["view"], "Deny DE DUA"), policies=[deny])
    api = Api(token("fgap", "de-dua-0"))
    assert names(api("get", "fgap/groups")) == ["DE", "DUA", "UK"]
    assert names(api("get", "fgap/groups", first=1, max=1)) == ["DUA"]
    assert api("get", "fgap/groups/count").json() == {"count": 6}
    assert api("get", f"fgap/groups/{GROUP['AT']}").status_code == 403
    assert api("get", f"fgap/groups/{GROUP['UK-DUA']}").status_code == 200


def test_client_admin_sees_and_pages_only_the_clients_they_may_view():
    realm = fgap_realm()
    account = Client.objects.get(realm=realm, client_id="account")
    api = Api(token("fgap", "de-dua-0"))
    assert api("get", "fgap/clients").json() == []  # query-clients lists nothing by itself (Keycloak 26.2)
    assert api("get", f"fgap/clients/{account.pk}").status_code == 403

    realm = fgap_realm(("DE admins view two clients", "Clients", list(CLIENT.values()), ["view"], "Allow DE DUA"))
    account, cli = (Client.objects.get(realm=realm, client_id=c) for c in ("account", "admin-cli"))
    api = Api(token("fgap", "de-dua-0"))
    listed = api("get", "fgap/clients").json()
    assert [c["clientId"] for c in listed] == ["account", "broker"]
    assert listed[0] == api("get", f"fgap/clients/{account.pk}").json()  # the full representation
    assert names(api("get", "fgap/clients", first=1, max=1), "clientId") == ["broker"]
    assert names(api("get", "fgap/clients", first=0, max=1), "clientId") == ["account"]
    assert names(api("get", "fgap/clients", clientId="admin-cli"), "clientId") == []
    assert names(api("get", "fgap/clients", clientId="o", search="true"), "clientId") == ["account", "broker"]
    resp = api("get", f"fgap/clients/{cli.pk}")
    assert (resp.status_code, resp.json()) == (403, FORBIDDEN)
    # a client's roles are listed to whoever may list that client (query-clients, as Keycloak)
    assert "manage-account" in names(api("get", f"fgap/clients/{account.pk}/roles"))
    assert api("get", f"fgap/clients/{cli.pk}/roles").status_code == 200
    assert names(Api(token("fgap", "uk-dua-0"))("get", "fgap/clients"), "clientId") == []


def test_a_realm_wide_role_lists_every_group_and_client():
    realm = fgap_realm(("DE admins view DE", "Groups", [GROUP["DE"]], ["view"], "Allow DE DUA"))
    admin = User.objects.get(realm=realm, username="de-dua-0")
    admin.roles.add(*Role.objects.filter(realm=realm, client__client_id="realm-management",
                                         name__in=["view-users", "view-clients"]))
    api = Api(token("fgap", "de-dua-0"))
    assert names(api("get", "fgap/groups")) == ["AT", "DE", "DUA", "UK"]
    assert api("get", "fgap/groups/count").json() == {"count": 7}
    assert names(api("get", f"fgap/groups/{GROUP['DUA']}/children")) == ["AT-DUA", "DE-DUA", "UK-DUA"]
    assert api("get", f"fgap/groups/{GROUP['AT']}").status_code == 200
    assert len(api("get", "fgap/clients").json()) == Client.objects.filter(realm=realm).count()


def test_the_console_lists_the_same_groups_and_clients():
    realm = fgap_realm(("DE admins view groups", "Groups", [GROUP["DE"], GROUP["UK"]], ["view"], "Allow DE DUA"),
                       ("DE admins view account", "Clients", [CLIENT["account"]], ["view"], "Allow DE DUA"))
    account = Client.objects.get(realm=realm, client_id="account")
    browser = Browser()
    resp = console_sign_in(browser, "de-dua-0", PASSWORD, realm="fgap")
    assert resp.status_code == 302, resp.content[:300]

    def listed(page, model):
        html = browser.get(f"{CONSOLE}realms/{page}/?realm__id__exact={realm.pk}").content.decode()
        return sorted(o.pk for o in model.objects.filter(realm=realm) if f"/realms/{page}/{o.pk}/change/" in html)

    api = Api(token("fgap", "de-dua-0"))
    assert listed("group", Group) == sorted(g["id"] for g in api("get", "fgap/groups").json()) == sorted(
        [GROUP["DE"], GROUP["UK"]])
    assert listed("client", Client) == [c["id"] for c in api("get", "fgap/clients").json()] == [account.pk]
    assert browser.get(f"{CONSOLE}realms/group/{GROUP['DE']}/change/").status_code == 200
    assert browser.get(f"{CONSOLE}realms/group/{GROUP['AT']}/change/").status_code == 302  # not found for them
    admin_cli = Client.objects.get(realm=realm, client_id="admin-cli")
    assert browser.get(f"{CONSOLE}realms/client/{admin_cli.pk}/change/").status_code == 302


def test_roles_are_listed_whole_to_whoever_may_list_them():
    """Roles have no view scope: Keycloak lists a container's roles whole, to view-realm or a query
    role for the realm's (RolePermissions.canList), while a role's own page needs view-realm."""
    realm = fgap_realm()
    api = Api(token("fgap", "de-dua-0"))  # query-users, query-groups, query-clients (through DUA)
    listed = names(api("get", "fgap/roles"))
    assert sorted(listed) == sorted(Role.objects.filter(realm=realm, client=None).values_list("name", flat=True))
    assert names(api("get", "fgap/roles", first=1, max=1)) == [sorted(listed)[1]]
    assert api("get", "fgap/roles/offline_access").status_code == 403
    user = User.objects.get(realm=realm, username="uk-dua-0")
    user.groups.clear()  # no query role left
    user.roles.add(Role.objects.get(realm=realm, client__client_id="realm-management", name="view-events"))
    assert Api(token("fgap", "uk-dua-0"))("get", "fgap/roles").status_code == 403
