"""The console's pickers (a user's groups and roles, a group's parent, a role's composites, an
organization's members, a flow's client) offer what ``realms.administration.admin_permissions`` lets the
signed-in admin pick, as the Admin REST API decides (docs/decisions/0045): the users and groups
they may list, the roles they may map; in the realm of the object edited only. The autocomplete
endpoint answers the same choices; saving a form keeps what it did not offer. Built on
Keycloak's own fgap export (the DE admins manage the members of the group DE)."""
import pytest
from django.test import Client as Browser

from realms.models import AuthenticationFlow, Group, Organization, Realm, Role, User
from realms.representation.services import create_realm
from tests.browser import console_sign_in
from tests.realms.test_admin import make_admin, read_form, select_options
from tests.realms.test_admin_permission_lists import CLIENT, CONSOLE, GROUP, fgap_realm
from tests.realms.test_admin_rest_api import PASSWORD

pytestmark = pytest.mark.django_db

ROLE = {"offline_access": "0a5d5dd4-80f4-4a89-bbc5-05c25c324548", "uma_authorization": "10b9800f-c6a7-4132-9cbd-933a9c0aba54"}


def sign_in(username):
    browser = Browser()
    resp = console_sign_in(browser, username, PASSWORD, realm="fgap")
    assert resp.status_code == 302, resp.content[:300]
    return browser


def autocomplete(browser, model_name, field_name, term=""):
    resp = browser.get(f"{CONSOLE}autocomplete/", {"app_label": "realms", "model_name": model_name,
                                                   "field_name": field_name, "term": term})
    assert resp.status_code == 200, resp.content[:300]
    return {r["id"] for r in resp.json()["results"]}


def grant(realm, username, *roles):
    User.objects.get(realm=realm, username=username).roles.add(
        *Role.objects.filter(realm=realm, client__client_id="realm-management", name__in=roles))


def group_admin_realm():
    """de-dua-0 lists DE (view-members) and DE-DUA (view, manage), may map offline_access, and
    holds view-realm (the role list's own page)."""
    realm = fgap_realm(("DE admins map offline_access", "Roles", [ROLE["offline_access"]], ["map-role"], "Allow DE DUA"),
                       ("DE admins manage DE-DUA", "Groups", [GROUP["DE-DUA"]], ["view", "manage"], "Allow DE DUA"))
    grant(realm, "de-dua-0", "view-realm")
    return realm


def test_a_group_admin_picks_a_users_groups_and_roles_among_those_they_may_list_and_map():
    realm = group_admin_realm()
    member = User.objects.get(realm=realm, username="de-user-1")
    member.groups.add(GROUP["UK-DUA"])  # not a group they may list
    member.roles.add(ROLE["uma_authorization"])  # not theirs to map
    roles = set(member.roles.values_list("pk", flat=True))  # default-roles-fgap too
    browser = sign_in("de-dua-0")
    url = f"{CONSOLE}realms/user/{member.pk}/change/"
    page = browser.get(url).content.decode()
    assert set(select_options(page, "groups")) == {GROUP["DE"], GROUP["DE-DUA"]}
    assert select_options(page, "roles") == [ROLE["offline_access"]]
    assert autocomplete(browser, "user", "groups") == {GROUP["DE"], GROUP["DE-DUA"]}
    assert autocomplete(browser, "user", "roles") == {ROLE["offline_access"]}
    assert autocomplete(browser, "role", "composites") == set()  # map-role-composite: none of theirs

    # saving keeps what the form did not offer, and adds what it did
    data = read_form(page, "user_form")
    data.update(first_name=["Delegated"], roles=[ROLE["offline_access"]])
    resp = browser.post(url, data)
    assert resp.status_code == 302, resp.content.decode()[-2000:]
    assert set(member.groups.values_list("pk", flat=True)) == {GROUP["DE"], GROUP["UK-DUA"]}
    assert set(member.roles.values_list("pk", flat=True)) == roles | {ROLE["offline_access"]}
    assert User.objects.get(pk=member.pk).first_name == "Delegated"
    # nor can a hidden choice be posted
    resp = browser.post(url, {**data, "groups": [GROUP["DE"], GROUP["AT-DUA"]]})
    assert resp.status_code == 200 and "Select a valid choice" in resp.content.decode()
    assert not member.groups.filter(pk=GROUP["AT-DUA"]).exists()


def test_a_group_admin_picks_a_groups_parent_among_those_they_may_list_and_keeps_its_own():
    group_admin_realm()
    browser = sign_in("de-dua-0")
    url = f"{CONSOLE}realms/group/{GROUP['DE-DUA']}/change/"
    page = browser.get(url).content.decode()
    # DUA, the parent they may not list, stays on offer as the current value; AT and UK do not
    assert set(select_options(page, "parent")) == {GROUP["DE"], GROUP["DUA"]}
    assert autocomplete(browser, "group", "parent") == {GROUP["DE"], GROUP["DE-DUA"]}
    data = read_form(page, "group_form")
    data["description"] = ["Delegated"]
    assert browser.post(url, data).status_code == 302
    group = Group.objects.get(pk=GROUP["DE-DUA"])
    assert (group.description, group.parent_id) == ("Delegated", GROUP["DUA"])


def test_organization_members_and_flow_clients_are_picked_among_those_they_may_list_or_manage():
    realm = fgap_realm(("DE admins manage account", "Clients", [CLIENT["account"]], ["view", "manage"], "Allow DE DUA"))
    realm.organizations_enabled = True
    realm.save()
    grant(realm, "de-dua-0", "manage-realm")
    org = Organization.objects.create(realm=realm, name="Acme", alias="acme")
    browser = sign_in("de-dua-0")
    de_users = set(User.objects.filter(realm=realm, groups=GROUP["DE"]).values_list("pk", flat=True))
    assert len(de_users) == 3
    assert autocomplete(browser, "organizationmember", "user") == de_users
    assert autocomplete(browser, "organizationmember", "user", term="at-user") == set()
    page = browser.get(f"{CONSOLE}realms/organization/{org.pk}/change/")
    assert page.status_code == 200
    flow = AuthenticationFlow.objects.get(realm=realm, alias="browser")
    page = browser.get(f"{CONSOLE}realms/authenticationflow/{flow.pk}/bind/").content.decode()
    assert select_options(page, "client") == [CLIENT["account"]]


def test_a_realm_wide_admin_picks_every_object_of_the_realm_edited_only():
    fgap = fgap_realm()
    create_realm("other")
    master = Realm.objects.get(name="master")
    browser = Browser()
    browser.force_login(make_admin(master, "picker-root"))
    member = User.objects.get(realm=fgap, username="de-user-1")
    page = browser.get(f"{CONSOLE}realms/user/{member.pk}/change/").content.decode()  # fgap becomes current
    every_group = set(Group.objects.filter(realm=fgap).values_list("pk", flat=True))
    every_role = set(Role.objects.filter(realm=fgap).values_list("pk", flat=True))
    assert set(select_options(page, "groups")) == every_group
    assert set(select_options(page, "roles")) == every_role
    assert autocomplete(browser, "user", "groups") == every_group
    # each realm has a realm-admin role (and master one per realm): the one of the realm edited only
    assert autocomplete(browser, "user", "roles", term="realm-admin") == set(
        Role.objects.filter(realm=fgap, name="realm-admin").values_list("pk", flat=True))
    assert autocomplete(browser, "user", "groups", term="DE") == {GROUP["DE"], GROUP["DE-DUA"]}
