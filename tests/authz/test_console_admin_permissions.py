"""The console's realm Permissions page (realms.admin.admin_permissions_page) and the "Admin
Permissions" switch of the realm's General tab: the page is listed only while the switch is on;
a policy and a permission created there decide what a realm user may administer at once (through
realms.administration.admin_permissions, as the Admin API decides), and the Admin API reads them."""
import pytest
from django.test import Client as Browser
from django.urls import reverse

from realms.administration.admin_permissions import Admin, can
from realms.models import Client, Realm, Role, User
from realms.representation.services import create_realm
from realms.users.accounts import create_user
from tests.browser import console_sign_in
from tests.realms.test_admin import make_admin, submit
from tests.realms.test_admin_rest_api import PASSWORD, Api, realm_admin, token

pytestmark = pytest.mark.django_db
PAGE = "/admin/master/console/realms/client/admin-permissions/"


@pytest.fixture
def setup(fresh_caches):
    acme = create_realm("acme", admin_events_enabled=True)
    helper = create_user(acme, "helper", password=PASSWORD)  # holds no administration role
    alice = create_user(acme, "alice", password=PASSWORD)
    browser = Browser()
    browser.force_login(make_admin(Realm.objects.get_or_create(name="master")[0]))
    browser.get(f"/admin/master/console/realms/user/?realm__id__exact={acme.pk}")  # the realm administered
    return acme, helper, alice, browser


def test_the_switch_lists_the_page_and_a_permission_made_there_takes_effect(setup):
    acme, helper, alice, browser = setup
    home = browser.get("/admin/master/console/").content.decode()
    assert PAGE not in home
    assert browser.get(PAGE).status_code == 404
    submit(browser, reverse("admin:realms_realm_change", args=[acme.pk]), "realm_form",
           {"admin_permissions_enabled": "on"})
    acme.refresh_from_db()
    assert acme.admin_permissions_enabled
    # As Keycloak, switching it on makes the admin-permissions client (the schema's types and scopes).
    made = Client.objects.get(realm=acme, client_id="admin-permissions")
    assert {r["name"] for r in made.authorization_settings["resources"]} == {"Users", "Groups", "Clients", "Roles"}
    assert f'href="{PAGE}"' in browser.get("/admin/master/console/").content.decode()
    page = browser.get(PAGE)
    assert page.status_code == 200 and "No permissions" in page.content.decode()

    assert not can(Admin(helper), acme, ("Users", "view"), alice)
    made = browser.post(PAGE, {"action": "add-policy", "type": "user", "name": "The helper", "values": "helper",
                               "logic": "POSITIVE"})
    assert made.status_code == 302, made.content.decode()[:2000]
    made = browser.post(PAGE, {"action": "add-permission", "name": "Helper views users", "resourceType": "Users",
                               "scopes": ["view"], "policies": ["The helper"], "decisionStrategy": "UNANIMOUS"})
    assert made.status_code == 302, made.content.decode()[:2000]
    assert can(Admin(User.objects.get(pk=helper.pk)), acme, ("Users", "view"), alice)
    text = browser.get(PAGE).content.decode()
    assert 'data-name="Helper views users"' in text and "<td>All</td>" in text

    # The Admin API reads what the console wrote, and the helper lists users there now.
    client = Client.objects.get(realm=acme, client_id="admin-permissions")
    api = realm_admin(acme, "authz-admin", "view-authorization")
    listed = api("get", f"acme/clients/{client.pk}/authz/resource-server/permission").json()
    assert [p["name"] for p in listed] == ["Helper views users"]
    assert Api(token("acme", "helper"))("get", "acme/users").status_code == 200

    again = browser.post(PAGE, {"action": "add-permission", "name": "Helper views users", "resourceType": "Groups",
                                "scopes": ["view"], "policies": ["The helper"], "decisionStrategy": "UNANIMOUS"})
    assert again.status_code == 400 and "Policy with name [Helper views users] already exists" in again.content.decode()
    permission = next(p for p in Client.objects.get(pk=client.pk).authorization_settings["policies"]
                      if p["name"] == "Helper views users")
    assert browser.post(PAGE, {"action": "delete", "id": permission["id"]}).status_code == 302
    assert not can(Admin(User.objects.get(pk=helper.pk)), acme, ("Users", "view"), alice)


def test_refusals_and_who_may_see_the_page(setup):
    acme, helper, alice, browser = setup
    acme.admin_permissions_enabled = True
    acme.save()
    scope = browser.post(PAGE, {"action": "add-permission", "name": "Odd", "resourceType": "Roles",
                                "scopes": ["view"], "decisionStrategy": "UNANIMOUS"})
    assert scope.status_code == 400 and "Scope view was not found for resource type Roles." in scope.content.decode()
    ghost = browser.post(PAGE, {"action": "add-policy", "type": "user", "name": "Ghost", "values": "nobody",
                                "logic": "POSITIVE"})
    assert ghost.status_code == 400 and "unknown user" in ghost.content.decode()
    settings = Client.objects.get(realm=acme, client_id="admin-permissions").authorization_settings
    assert settings["policies"] == []
    # A realm admin with view-authorization sees the page without its forms; without it, nothing.
    for name, roles in (("viewer", ("view-authorization",)), ("users-admin", ("manage-users",))):
        user = create_user(acme, name, password=PASSWORD)
        user.roles.add(*Role.objects.filter(realm=acme, client__client_id="realm-management", name__in=roles))
    viewer = Browser()
    assert console_sign_in(viewer, "viewer", PASSWORD, realm="acme").status_code == 302
    page = viewer.get(PAGE)
    assert page.status_code == 200 and "Create permission" not in page.content.decode()
    assert viewer.post(PAGE, {"action": "add-policy", "type": "user", "name": "x", "values": "helper",
                              "logic": "POSITIVE"}).status_code == 403
    other = Browser()
    assert console_sign_in(other, "users-admin", PASSWORD, realm="acme").status_code == 302
    assert other.get(PAGE).status_code == 403
    assert PAGE not in other.get("/admin/master/console/").content.decode()
