"""A client's Authorization tab as a person uses it, in headless Chromium at a phone's width
(390 px): from the client's page to the tab, a scope and a role policy created with the keyboard
(Tab from field to field, Enter creates), a JavaScript policy refused in Keycloak's words, then
Evaluate showing the decision; every sub-tab fits the screen, shows no raw message key and no
error page."""
import pytest

from realms.models import Client, Realm, Role
from realms.representation import import_realm
from realms.users.accounts import create_user
from tests.browser import CONSOLE, chromium, master_admin, sign_in_to_console  # noqa: F401 (chromium: a fixture)
from tests.oidc.browser.conftest import PASSWORD
from tests.realms.test_console_identity_providers_browser import phone, reads_well, type_and_tab  # noqa: F401
from tests.realms.test_import_export import load

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fresh_caches")]


@pytest.fixture
def client(transactional_db):
    master_admin(PASSWORD)
    realm = import_realm(load("quickstarts-kc9-full-export-realm-b.json")).realm
    return Client.objects.get(realm=realm, client_id="realm-b-client")


def open_tab(page, label, slug):
    """A sub-tab's link, followed until its page has loaded."""
    page.get_by_role("link", name=label, exact=True).click()
    page.wait_for_url(f"**/authorization/{slug}/")
    page.wait_for_load_state()


def test_create_a_policy_and_evaluate_by_the_keyboard_on_a_phone(live_server, client, phone):
    page, statuses = phone
    base = live_server.url
    sign_in_to_console(page, base, "root", PASSWORD, next_path=f"{CONSOLE}realms/client/{client.pk}/change/")
    page.get_by_role("tab", name="Authorization").click()
    open_tab(page, "Authorization scopes", "scopes")
    problems = reads_well(page)

    page.locator("#authz-add-scope #id_name").focus()
    type_and_tab(page, [("name", "doc:edit"), ("displayName", "Edit documents")])
    page.keyboard.press("Enter")
    page.locator('#authz-scopes tr[data-name="doc:edit"]').wait_for()
    problems += reads_well(page)

    open_tab(page, "Policies", "policies")
    page.locator("#authz-add-policy #id_type").select_option("role")
    page.locator("#authz-add-policy #id_name").focus()
    type_and_tab(page, [("name", "Premium users"), ("description", "Holders of premium")])
    page.keyboard.press("Tab")
    page.keyboard.type("premium")  # the values, one per line
    page.locator("#authz-add-policy #id_name").press("Enter")
    page.locator('#authz-policies tr[data-name="Premium users"]').wait_for()
    problems += reads_well(page)

    page.locator("#authz-add-policy #id_type").select_option("js")
    page.locator("#authz-add-policy #id_name").fill("Script")
    page.locator("#authz-add-policy #id_name").press("Enter")
    assert page.locator("#authz-error").inner_text() == "Script upload is disabled"

    open_tab(page, "Evaluate", "evaluate")
    page.locator("#authz-evaluate #id_user").fill("kolo")
    page.locator("#authz-evaluate #id_user").press("Enter")
    row = page.locator('#authz-results tr[data-name="Premium Resource"]')
    assert row.locator(".decision").inner_text() == "PERMIT"
    page.locator("#authz-evaluate #id_user").fill("jdoe")
    page.locator("#authz-evaluate #id_user").press("Enter")
    assert page.locator('#authz-results tr[data-name="Premium Resource"] .decision').inner_text() == "DENY"
    assert page.locator('#authz-results tr[data-name="Default Resource"] .decision').inner_text() == "PERMIT"
    problems += reads_well(page)

    for name in ("Settings", "Resources", "Permissions", "Export"):
        open_tab(page, name, name.lower())
        problems += reads_well(page)
    assert problems == []
    assert not [s for s in statuses if s[0] >= 500]
    names = [p["name"] for p in Client.objects.get(pk=client.pk).authorization_settings["policies"]]
    assert "Premium users" in names and "Script" not in names
