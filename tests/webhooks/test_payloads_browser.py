"""The console's webhook endpoint form in headless Chromium at a phone's width: a fat, CloudEvents
endpoint added with the keyboard (type letters on the selects, Enter submits), then its page's
link to the event type's JSON Schema followed; no raw message key, nothing wider than the screen,
no error page."""
import pytest
from django.urls import reverse

from realms.models import Realm, Role
from realms.representation.services import create_realm
from realms.users.accounts import create_user
from tests.browser import chromium, master_admin, sign_in_to_console  # noqa: F401 (chromium: a fixture)
from tests.oidc.browser.conftest import PASSWORD
from tests.realms.test_console_identity_providers_browser import phone, reads_well  # noqa: F401
from webhooks.models import Endpoint

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fresh_caches")]


@pytest.fixture
def acme(transactional_db):
    master_admin(PASSWORD)
    return create_realm("acme")


def test_add_a_fat_cloudevents_endpoint_by_the_keyboard_on_a_phone(phone, live_server, acme):
    page, statuses = phone
    base = live_server.url
    sign_in_to_console(page, base, "root", PASSWORD)
    page.goto(base + reverse("admin:realms_realm_change", args=[acme.pk]))  # work in acme
    page.goto(base + reverse("admin:webhooks_endpoint_add"))
    problems = reads_well(page)
    page.locator("#id_url").fill("https://hooks.example.com/crm")
    page.locator("#id_payload").focus()
    page.keyboard.type("f")  # "fat: a snapshot of the object"
    page.locator("#id_envelope").focus()
    page.keyboard.type("c")  # "CloudEvents 1.0, structured JSON"
    page.locator("#id_description").focus()
    page.keyboard.type("CRM sync")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    problems += reads_well(page)
    endpoint = Endpoint.objects.get(realm=acme)
    assert (endpoint.payload, endpoint.payload_version, endpoint.envelope) == ("fat", "v1", "cloudevents")

    page.goto(base + reverse("admin:webhooks_endpoint_change", args=[endpoint.pk]))
    problems += reads_well(page)
    link = page.get_by_role("link", name="AsyncAPI document")
    assert link.is_visible()
    with page.expect_response(lambda r: r.url.endswith("asyncapi.json")) as answer:
        link.focus()
        page.keyboard.press("Enter")
    assert answer.value.status == 200 and answer.value.json()["asyncapi"] == "3.0.0"
    assert problems == []
    assert not [s for s in statuses if s[0] >= 500]
