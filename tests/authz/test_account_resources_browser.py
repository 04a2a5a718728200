"""The account console's "My resources" in headless Chromium at a phone's width, by the keyboard:
jdoe shares an album with kolo by e-mail (Enter in the share form), kolo's UMA request then
succeeds; jdoe unshares (Tab to the button, Enter) and it fails again. Readable text, no raw
message keys, nothing wider than the screen, axe-core without serious violations."""
import re
from pathlib import Path

import pytest
from django.test import Client as HttpClient

from realms.models import Client
from realms.representation import import_realm
from tests.authz.test_uma import REALM, SECRET, UMA
from tests.browser import chromium  # noqa: F401 (chromium: a fixture)
from tests.realms.test_import_export import load

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
AXE = Path(__file__).resolve().parents[1] / "js" / "node_modules" / "axe-core" / "axe.min.js"
TOKEN = f"/realms/{REALM}/protocol/openid-connect/token"


@pytest.fixture
def base(live_server):
    return live_server.url.replace("localhost", "127.0.0.1")


@pytest.fixture
def album(transactional_db, base, fresh_caches):
    realm = import_realm(load("quickstarts-kc9-full-export-realm-b.json")).realm
    realm.user_managed_access_allowed = True  # the export has it off: My resources is listed only when on
    realm.save(update_fields=["user_managed_access_allowed"])
    assert Client.objects.get(realm=realm, client_id="realm-b-client").authorization_services_enabled
    pat = HttpClient().post(TOKEN, {"grant_type": "client_credentials", "client_id": "realm-b-client",
                                    "client_secret": SECRET}).json()["access_token"]
    made = HttpClient(HTTP_AUTHORIZATION=f"Bearer {pat}").post(
        f"/realms/{REALM}/authz/protection/resource_set",
        {"name": "Holidays", "resource_scopes": ["album:view", "album:delete"], "owner": "jdoe",
         "ownerManagedAccess": True}, content_type="application/json")
    assert made.status_code == 201, made.content
    return made.json()


@pytest.fixture
def page(chromium):
    context = chromium.new_context(viewport={"width": 375, "height": 800})
    yield context.new_page()
    context.close()


def kolo_may_view(album):
    token = HttpClient().post(TOKEN, {"grant_type": "password", "client_id": "realm-b-client",
                                      "client_secret": SECRET, "username": "kolo",
                                      "password": "kolo"}).json()["access_token"]
    resp = HttpClient(HTTP_AUTHORIZATION=f"Bearer {token}").post(TOKEN, {
        "grant_type": UMA, "audience": "realm-b-client", "permission": f"{album['_id']}#album:view",
        "response_mode": "decision"})
    return resp.status_code == 200 and resp.json() == {"result": True}


def readable(page):
    text = page.locator("main").inner_text()
    assert "${" not in text and not re.search(r"\b[a-z]+[A-Z]\w*(Message|Error|Success)\b", text)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    page.add_script_tag(path=str(AXE))
    found = page.evaluate("async () => (await axe.run(document)).violations.map(v => ({id: v.id, impact: v.impact}))")
    assert [v for v in found if v["impact"] in ("serious", "critical")] == []


def test_share_and_unshare_by_the_keyboard_on_a_phone(album, base, page):
    page.goto(f"{base}/realms/{REALM}/account/resources")
    page.locator("#username").fill("jdoe")
    page.locator("#password").fill("jdoe")
    page.locator("#password").press("Enter")
    page.locator("#page-title").wait_for(timeout=10000)
    assert page.locator("h1").inner_text() == "My resources"
    assert page.get_by_text("This resource is not shared.").is_visible()
    readable(page)
    assert not kolo_may_view(album)

    page.get_by_label("album:view").check()
    page.locator("#share-user-1").fill("kolo@keycloak.org")
    page.locator("#share-user-1").press("Enter")
    page.locator("#notice").wait_for()
    assert page.locator("#notice").inner_text() == "Resource successfully shared."
    assert page.locator('.shared[data-username="kolo"]').inner_text().startswith("kolo")
    readable(page)
    assert kolo_may_view(album)

    # An unknown user is said beside the form, nothing else changes.
    page.locator("#share-user-1").fill("nobody")
    page.get_by_label("album:delete").check()
    page.locator("#share-user-1").press("Enter")
    assert page.locator("#resources-error").inner_text() == "No user nobody was found."
    readable(page)

    page.get_by_role("button", name="Unshare with kolo").focus()
    page.keyboard.press("Enter")
    page.locator("#notice").wait_for()
    assert page.locator("#notice").inner_text() == "Resource successfully un-shared."
    assert not kolo_may_view(album)
