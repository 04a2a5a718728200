"""The realm's Permissions page in headless Chromium at a phone's width (390 px): reached from the
navigation, a user policy and a permission on Users created with the keyboard (Tab between
fields, Space ticks a scope, Enter creates), the page fitting the screen, no raw message key and
no error page; the permission then decides what the helper may administer."""
import pytest

from realms.administration.admin_permissions import Admin, can
from realms.models import Realm, Role, User
from realms.representation.services import create_realm
from realms.users.accounts import create_user
from tests.browser import CONSOLE, chromium, master_admin, sign_in_to_console  # noqa: F401 (chromium: a fixture)
from tests.oidc.browser.conftest import PASSWORD
from tests.realms.test_console_identity_providers_browser import phone, reads_well, type_and_tab  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fresh_caches")]


@pytest.fixture
def acme(transactional_db):
    master_admin(PASSWORD)
    realm = create_realm("acme", admin_permissions_enabled=True)
    create_user(realm, "helper", password=PASSWORD)
    create_user(realm, "alice", password=PASSWORD)
    return realm


def test_create_a_policy_and_a_permission_by_the_keyboard_on_a_phone(live_server, acme, phone):
    page, statuses = phone
    base = live_server.url
    sign_in_to_console(page, base, "root", PASSWORD, next_path=f"{CONSOLE}realms/user/?realm__id__exact={acme.pk}")
    page.goto(f"{base}{CONSOLE}")
    page.locator("#content-main").get_by_role("link", name="Permissions", exact=True).click()
    page.locator("#admin-permissions").wait_for()
    problems = reads_well(page)

    page.locator("#add-policy #id_type").select_option("user")
    page.locator("#add-policy #id_name").focus()
    type_and_tab(page, [("name", "The helper"), ("description", "Only the helper")])
    page.keyboard.press("Tab")
    page.keyboard.type("helper")
    page.locator("#add-policy #id_name").press("Enter")
    page.locator('#admin-policies tr[data-name="The helper"]').wait_for()
    problems += reads_well(page)

    page.locator("#add-permission #id_name").focus()
    type_and_tab(page, [("name", "Helper views users"), ("description", "Delegated")])
    page.locator("#add-permission #id_resourceType").select_option("Users")
    page.locator('#add-permission input[name="scopes"][value="view"]').focus()
    page.keyboard.press("Space")
    page.locator("#add-permission #id_policies").select_option("The helper")
    page.locator("#add-permission #id_name").press("Enter")
    page.locator('#admin-permissions tr[data-name="Helper views users"]').wait_for()
    problems += reads_well(page)
    assert problems == []
    assert not [s for s in statuses if s[0] >= 500]
    helper, alice = (User.objects.get(realm=acme, username=n) for n in ("helper", "alice"))
    assert can(Admin(helper), acme, ("Users", "view"), alice)
    assert not can(Admin(helper), acme, ("Users", "manage"), alice)


def test_the_reset_password_scope_is_offered_and_ticked_by_the_keyboard(live_server, acme, phone):
    """Keycloak 26.4's ``reset-password`` of Users, among the scopes a person reads and ticks."""
    page, statuses = phone
    base = live_server.url
    sign_in_to_console(page, base, "root", PASSWORD, next_path=f"{CONSOLE}realms/user/?realm__id__exact={acme.pk}")
    page.goto(f"{base}{CONSOLE}")
    page.locator("#content-main").get_by_role("link", name="Permissions", exact=True).click()
    page.locator("#add-policy #id_type").select_option("user")
    page.locator("#add-policy #id_name").focus()
    type_and_tab(page, [("name", "The helpdesk"), ("description", "Resets passwords")])
    page.keyboard.press("Tab")
    page.keyboard.type("helper")
    page.locator("#add-policy #id_name").press("Enter")
    page.locator('#admin-policies tr[data-name="The helpdesk"]').wait_for()

    page.locator("#add-permission #id_name").focus()
    type_and_tab(page, [("name", "Helpdesk resets passwords"), ("description", "Nothing more")])
    page.locator("#add-permission #id_resourceType").select_option("Users")
    scope = page.locator("#add-permission").get_by_label("reset-password", exact=True)
    assert scope.is_visible()
    scope.focus()
    page.keyboard.press("Space")
    assert scope.is_checked()
    page.locator("#add-permission #id_policies").select_option("The helpdesk")
    page.locator("#add-permission #id_name").press("Enter")
    row = page.locator('#admin-permissions tr[data-name="Helpdesk resets passwords"]')
    row.wait_for()
    assert "reset-password" in row.inner_text()
    assert reads_well(page) == []
    assert not [s for s in statuses if s[0] >= 500]
    helper, alice = (User.objects.get(realm=acme, username=n) for n in ("helper", "alice"))
    assert can(Admin(helper), acme, ("Users", "reset-password"), alice)
    assert not can(Admin(helper), acme, ("Users", "manage"), alice)
    assert not can(Admin(helper), acme, ("Users", "view"), alice)
