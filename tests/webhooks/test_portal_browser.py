"""The consumer portal in headless Chromium at a phone's width, by keyboard: a test event sent, the
secret rotated (the new one shown), an event's attempts opened and redelivered; an altered or
expired link refused in words; axe-core finds no serious or critical violation."""
import re
from datetime import timedelta
from pathlib import Path

import pytest
import time_machine
from django.utils import timezone

from realms.models import Realm
from tests.browser import chromium  # noqa: F401 (a fixture)
from webhooks import delivery, portal, services
from webhooks.models import Delivery, Message

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("loopback_allowed")]
AXE = Path(__file__).resolve().parents[1] / "js" / "node_modules" / "axe-core" / "axe.min.js"


@pytest.fixture
def base(live_server):
    return live_server.url.replace("localhost", "127.0.0.1")


@pytest.fixture
def link(transactional_db, receiver_server, monkeypatch):
    realm = Realm.objects.create(name="wh-portal", admin_events_enabled=True)
    endpoint, _ = services.create_endpoint(realm, receiver_server.url(), ["user.*"], description="CRM sync")
    sent = []
    monkeypatch.setattr("webhooks.dispatch.deliveries", lambda batch: sent.extend(batch))
    url, _ = portal.issue_link(None, endpoint, expires_in=600)
    return {"path": re.sub(r"^https?://[^/]+", "", url), "endpoint": endpoint, "sent": sent}


@pytest.fixture
def page(chromium):  # noqa: F811
    context = chromium.new_context(viewport={"width": 375, "height": 800})
    yield context.new_page()
    context.close()


def _fits_the_phone(page):
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def _no_serious_violations(page):
    page.add_script_tag(path=str(AXE))
    result = page.evaluate("async () => (await axe.run(document)).violations.map(v => ({id: v.id, impact: v.impact}))")
    assert [v for v in result if v["impact"] in ("serious", "critical")] == []


def test_the_portal_by_keyboard_on_a_phone(page, base, link):
    page.goto(base + link["path"])
    assert page.locator("#endpoint-url").inner_text() == link["endpoint"].url
    assert "This link works until" in page.locator("#link-expiry").inner_text()
    _fits_the_phone(page)
    _no_serious_violations(page)
    # Send a test event: focus the button and press Enter.
    page.locator("#send-test").focus()
    page.keyboard.press("Enter")
    page.locator("#notice").wait_for()
    assert page.locator("#notice").inner_text() == "A test event is on its way."
    delivery.attempt(link["sent"][-1])
    # Rotate at once: the second choice by arrow key, Tab to the button, Enter.
    page.locator("input[name=overlap][value='24h']").focus()
    page.keyboard.press("ArrowDown")
    assert page.locator("#overlap-now").is_checked()
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "rotate"
    page.keyboard.press("Enter")
    page.locator("#new-secret").wait_for()
    assert page.locator("#new-secret").input_value().startswith("whsec_")
    _fits_the_phone(page)
    # The delivery log: the test event delivered; open it by keyboard.
    page.goto(base + link["path"])
    message = Message.objects.get(type="webhook.test")
    row_link = page.locator(f"a[href$='events/{message.pk}']")
    assert "Delivered" in page.locator("#deliveries").inner_text()
    row_link.focus()
    page.keyboard.press("Enter")
    page.locator("#event-id").wait_for()
    assert page.locator("#event-id").inner_text() == message.pk
    assert "Attempt 1: delivered" in page.locator("#attempt-1").inner_text()
    assert '"endpointId"' in page.locator("#request-body").inner_text()
    _fits_the_phone(page)
    _no_serious_violations(page)
    page.locator("#redeliver").focus()
    page.keyboard.press("Enter")
    page.locator("#notice").wait_for()
    assert page.locator("#notice").inner_text() == "The event is queued to be sent again."
    assert Delivery.objects.get(message=message).state == Delivery.PENDING


def test_an_altered_or_expired_link_is_refused_in_words(page, base, link):
    token = link["path"].split("/")[-2]
    page.goto(base + link["path"].replace(token, token[:-3] + ("xyz" if not token.endswith("xyz") else "abc")))
    assert page.locator("#refused").inner_text().startswith("This link is not valid.")
    assert link["endpoint"].url not in page.content()
    with time_machine.travel(timezone.now() + timedelta(minutes=11)):
        page.goto(base + link["path"])
        assert page.locator("#refused").inner_text().startswith("This link has expired.")
