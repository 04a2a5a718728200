"""The console decides with the same function as the Admin REST API (realms.administration.admin_permissions):
a realm's own admins sign in to that realm only, fine-grained permissions limit a group's
admins to its members, master users with a realm's X-realm roles administer that realm only."""
import pytest
from django.test import Client as Browser

from realms.data import realm_cache
from realms.models import Client, Realm, Role, User
from realms.representation import import_realm
from realms.representation.services import create_realm
from realms.users import storage
from realms.users.accounts import create_user
from tests.browser import console_sign_in
from tests.realms.test_admin import submit
from tests.realms.test_admin_rest_api import PASSWORD
from tests.realms.test_import_export import load

pytestmark = pytest.mark.django_db
CONSOLE = "/admin/master/console/"


def sign_in(username, realm="master"):
    browser = Browser()
    resp = console_sign_in(browser, username, PASSWORD, realm=realm)
    assert resp.status_code == 302 and resp["Location"] == CONSOLE, resp.content[:500]
    return browser


def listed_users(browser, realm):
    page = browser.get(f"{CONSOLE}realms/user/?realm__id__exact={realm.pk}")
    assert page.status_code == 200
    return sorted(u.username for u in User.objects.filter(realm=realm) if f"/realms/user/{u.pk}/change/" in
                  page.content.decode())


def test_group_admin_in_the_console_sees_and_edits_the_group_members_only():
    realm_cache.clear()
    fgap = import_realm(load("keycloak-fgap-realm-kc26-full-export.json")).realm
    for user in User.objects.filter(realm=fgap, service_account_client=None):
        storage.set_password(user.realm, user, PASSWORD)
    browser = sign_in("de-dua-0", "fgap")
    assert listed_users(browser, fgap) == ["de-user-0", "de-user-1", "de-user-2"]
    de1, at0 = (User.objects.get(realm=fgap, username=n) for n in ("de-user-1", "at-user-0"))
    assert browser.get(f"{CONSOLE}realms/user/{at0.pk}/change/").status_code == 302  # not found for them
    submit(browser, f"{CONSOLE}realms/user/{de1.pk}/change/", "user_form", {"first_name": "Delegated"})
    assert User.objects.get(pk=de1.pk).first_name == "Delegated"
    account = Client.objects.get(realm=fgap, client_id="account")
    assert browser.get(f"{CONSOLE}realms/client/{account.pk}/change/").status_code == 302  # query-clients only
    # a member of the groups, with no administration right, is no console user
    member = Browser()
    console_sign_in(member, "at-user-0", PASSWORD, realm="fgap")
    assert member.get(CONSOLE, follow=True).status_code == 403  # the page saying they administer nothing


def test_realm_b_admin_sees_nothing_of_realm_a_in_the_console():
    realm_cache.clear()
    acme, other = create_realm("acme"), create_realm("other")
    create_user(acme, "victim")
    b_admin = create_user(other, "b-admin", password=PASSWORD)
    b_admin.roles.add(Role.objects.get(realm=other, client__client_id="realm-management", name="realm-admin"))
    browser = sign_in("b-admin", "other")
    page = browser.get(f"{CONSOLE}realms/realm/").content.decode()
    assert f"/realms/realm/{other.pk}/change/" in page and f"/realms/realm/{acme.pk}/change/" not in page
    assert "victim" not in browser.get(f"{CONSOLE}realms/user/?realm__id__exact={acme.pk}").content.decode()
    victim = User.objects.get(realm=acme, username="victim")
    assert browser.get(f"{CONSOLE}realms/user/{victim.pk}/change/").status_code == 302
    acme_client = Client.objects.get(realm=acme, client_id="account")
    assert browser.get(f"{CONSOLE}realms/client/{acme_client.pk}/change/").status_code == 302
    # and signing in as b-admin to the master realm's console fails: they are not its user
    resp = console_sign_in(Browser(), "b-admin", PASSWORD)
    assert resp.status_code == 200  # the login page again


def test_master_user_with_a_realms_view_users_role():
    realm_cache.clear()
    acme = create_realm("acme")
    create_realm("other")
    kim = create_user(acme, "kim")
    master = Realm.objects.get(name="master")
    helper = create_user(master, "helpdesk", password=PASSWORD)
    helper.roles.add(Role.objects.get(realm=master, client__client_id="acme-realm", name="view-users"))
    browser = sign_in("helpdesk")
    assert listed_users(browser, acme) == ["kim"]
    page = browser.get(f"{CONSOLE}realms/user/{kim.pk}/change/")
    assert page.status_code == 200 and b'name="_save"' not in page.content  # view only
    assert browser.get(f"{CONSOLE}realms/client/").status_code == 403
    page = browser.get(f"{CONSOLE}realms/realm/").content.decode()
    assert "other" not in page and "master" not in page.split("<table")[-1]
