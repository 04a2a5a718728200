"""User-managed access in headless Chromium at a phone's width: the account console has no
"My resources" while the realm's switch is off; an admin turns "User-managed access" on in the
realm's General tab with the keyboard (Space ticks, Enter saves) and the user's menu then lists
the page, reached by the keyboard."""
import pytest

from realms.models import Realm, Role
from realms.representation import import_realm
from realms.users.accounts import create_user
from tests.browser import CONSOLE, chromium, master_admin, sign_in_to_console  # noqa: F401 (chromium: a fixture)
from tests.oidc.browser.conftest import PASSWORD
from tests.realms.test_console_identity_providers_browser import phone, reads_well  # noqa: F401 (phone: a fixture)
from tests.realms.test_import_export import load

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fresh_caches")]


@pytest.fixture
def realm_b(transactional_db):
    master_admin(PASSWORD)
    return import_realm(load("quickstarts-kc9-full-export-realm-b.json")).realm


def sign_in_to_account(page, base):
    page.goto(f"{base}/realms/realm-b/account/")
    page.locator("#username").fill("jdoe")
    page.locator("#password").fill("jdoe")
    page.locator("#password").press("Enter")
    page.locator("nav.sections").wait_for()


def test_switch_on_by_the_keyboard_then_my_resources_is_listed(live_server, realm_b, phone, chromium):  # noqa: F811
    page, statuses = phone
    base = live_server.url
    sign_in_to_account(page, base)
    assert "My resources" not in page.locator("nav.sections").inner_text()
    assert page.goto(f"{base}/realms/realm-b/account/resources").status == 403
    problems = reads_well(page)

    admin = chromium.new_context(viewport={"width": 390, "height": 844}).new_page()
    change = f"{CONSOLE}realms/realm/{realm_b.pk}/change/"
    sign_in_to_console(admin, base, "root", PASSWORD, next_path=change)
    switch = admin.get_by_label("User-managed access")
    switch.focus()
    admin.keyboard.press("Space")
    assert switch.is_checked()
    admin.locator("#id_display_name").focus()
    with admin.expect_navigation():
        admin.keyboard.press("Enter")
    admin.locator(".messagelist .success").wait_for()
    problems += reads_well(admin)
    realm_b.refresh_from_db()
    assert realm_b.user_managed_access_allowed is True
    admin.context.close()

    page.goto(f"{base}/realms/realm-b/account/")
    link = page.locator("nav.sections").get_by_role("link", name="My resources")
    link.focus()
    page.keyboard.press("Enter")
    page.wait_for_url(f"{base}/realms/realm-b/account/resources")
    assert page.locator("h1").inner_text() == "My resources"
    problems += reads_well(page)
    assert problems == []
    assert not [s for s in statuses if s[0] >= 500]
