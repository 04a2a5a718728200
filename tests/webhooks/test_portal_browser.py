"""The consumer portal in headless Chromium at a phone's width, by keyboard: the link opened with its
token in the fragment only (no request the browser makes carries it in a URL), a test event sent,
the secret rotated (the new one shown), an event's attempts opened and redelivered; an altered or
expired link refused in words; revoking closes an open portal; two endpoints' portals side by side;
a link of the old form; without JavaScript the key typed in; axe-core finds no serious or critical
violation."""
import re
from datetime import timedelta
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import pytest
import time_machine
from django.utils import timezone

from realms.models import Realm
from tests.browser import chromium, open_page  # noqa: F401 (a fixture)
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
    path = re.sub(r"^https?://[^/]+", "", url)  # the portal's address, then "#" and the token
    return {"path": path, "portal": path.split("#")[0], "token": path.split("#")[1], "endpoint": endpoint,
            "sent": sent, "realm": realm}


@pytest.fixture
def page(chromium):  # noqa: F811
    context = chromium.new_context(viewport={"width": 375, "height": 800})
    page = context.new_page()
    page.sent = []  # every request the browser makes: what the server could log
    page.on("request", lambda request: page.sent.append(request))
    yield page
    context.close()


def _open(page, url):
    """The link opened as a person opens it: its page posts the fragment and lands on the portal."""
    portal_path = urlsplit(url).path
    with page.expect_response(lambda r: urlsplit(r.url).path == portal_path and r.request.redirected_from is not None
                              and r.request.redirected_from.method == "POST"):
        open_page(page, url)
    page.locator("#endpoint-url, #refused").first.wait_for()  # the portal's page, not the opening one


def _never_in_a_url(page, token):
    """No request carried the token where servers and proxies log it: path, query, Referer."""
    assert page.sent
    for request in page.sent:
        parts = urlsplit(request.url)
        assert token not in unquote(parts.path + parts.query), request.url
        assert token not in request.headers.get("referer", ""), request.url


def _fits_the_phone(page):
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def _no_serious_violations(page):
    page.add_script_tag(path=str(AXE))
    result = page.evaluate("async () => (await axe.run(document)).violations.map(v => ({id: v.id, impact: v.impact}))")
    assert [v for v in result if v["impact"] in ("serious", "critical")] == []


def test_the_portal_by_keyboard_on_a_phone(page, base, link):
    _open(page, base + link["path"])
    assert page.locator("#endpoint-url").inner_text() == link["endpoint"].url
    # The token went in a POST's body alone, and left the address (and so the history).
    assert page.evaluate("location.hash") == "" and link["token"] not in page.url
    posts = [r for r in page.sent if r.method == "POST"]
    assert [urlsplit(r.url).path for r in posts] == [link["portal"] + "session"]
    assert parse_qs(posts[0].post_data)["token"] == [link["token"]]
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
    page.goto(base + link["portal"])
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
    _never_in_a_url(page, link["token"])
    cookie, = [c for c in page.context.cookies() if c["name"] == portal.COOKIE]
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == link["portal"]
    assert page.evaluate("document.cookie").find(link["token"]) == -1  # no script reads it


def _refused(page, base, url, words):
    page.goto("about:blank")  # else a link of the address shown is only a new fragment: see below
    open_page(page, base + url)
    page.locator("#refused").wait_for()
    assert page.locator("#refused").inner_text().startswith(words)
    assert "#" not in page.url and portal.COOKIE not in {c["name"] for c in page.context.cookies()}


def test_an_altered_or_expired_link_is_refused_in_words(page, base, link):
    token = link["token"]
    _refused(page, base, link["path"].replace(token, token[:-3] + ("xyz" if not token.endswith("xyz") else "abc")),
             "This link is not valid.")
    assert link["endpoint"].url not in page.content()
    with time_machine.travel(timezone.now() + timedelta(minutes=11)):
        _refused(page, base, link["path"], "This link has expired.")
    # Another realm's address with this endpoint's link: nothing.
    Realm.objects.create(name="wh-other")
    _refused(page, base, link["path"].replace("/wh-portal/", "/wh-other/"), "This link is not valid.")
    _never_in_a_url(page, token)


def test_revoking_closes_an_open_portal(page, base, link):
    _open(page, base + link["path"])
    assert page.locator("#endpoint-url").inner_text() == link["endpoint"].url
    portal.revoke_links(link["endpoint"])
    page.reload()
    assert page.locator("#refused").inner_text().startswith("This link was withdrawn.")
    assert link["endpoint"].url not in page.content()
    assert portal.COOKIE not in {c["name"] for c in page.context.cookies()}
    _refused(page, base, link["path"], "This link was withdrawn.")
    # A new link typed into the tab that shows the portal's address (its cookie dropped: the opening
    # page) only changes its fragment: the page's script posts it all the same, and the portal opens.
    with time_machine.travel(timezone.now() + timedelta(seconds=2)):
        fresh = re.sub(r"^https?://[^/]+", "", portal.issue_link(None, link["endpoint"], expires_in=600)[0])
        page.goto(base + link["portal"])
        assert page.locator("#open-help").is_visible()
        _open(page, base + fresh)
        assert page.locator("#endpoint-url").inner_text() == link["endpoint"].url


def test_two_endpoints_side_by_side_in_one_browser(page, base, link, receiver_server):
    other, _ = services.create_endpoint(link["realm"], receiver_server.url() + "?second", description="Billing")
    other_path = re.sub(r"^https?://[^/]+", "", portal.issue_link(None, other, expires_in=600)[0])
    _open(page, base + link["path"])
    second = page.context.new_page()
    _open(second, base + other_path)
    page.reload()
    second.reload()
    assert page.locator("#endpoint-url").inner_text() == link["endpoint"].url
    assert second.locator("#endpoint-url").inner_text() == other.url
    paths = sorted(c["path"] for c in page.context.cookies() if c["name"] == portal.COOKIE)
    assert paths == sorted([link["portal"], other_path.split("#")[0]])
    # Pausing one leaves the other alone.
    page.locator("#pause").focus()
    page.keyboard.press("Enter")
    page.locator("#notice").wait_for()
    other.refresh_from_db()
    assert other.enabled is True
    second.reload()
    assert second.locator("#endpoint-url").inner_text() == other.url


def test_a_link_of_the_old_form_redirects_and_works(page, base, link):
    page.goto(f"{base}/realms/wh-portal/webhooks/portal/{link['token']}/")
    assert urlsplit(page.url).path == link["portal"] and link["token"] not in page.url
    assert page.locator("#endpoint-url").inner_text() == link["endpoint"].url
    page.locator("#send-test").focus()
    page.keyboard.press("Enter")
    page.locator("#notice").wait_for()
    assert page.locator("#notice").inner_text() == "A test event is on its way."


def test_without_javascript_the_key_is_typed_in(chromium, base, link):  # noqa: F811
    context = chromium.new_context(viewport={"width": 375, "height": 800}, java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(base + link["path"])
        help_text = page.locator("#open-help").inner_text()
        assert "copy the part of the link after the # sign into the field below" in help_text
        _fits_the_phone(page)
        page.keyboard.press("Tab")  # the skip link, then the language links if any, then the field
        while page.evaluate("document.activeElement.id") != "portal-key":
            page.keyboard.press("Tab")
        page.keyboard.type(link["token"])
        page.keyboard.press("Enter")
        page.locator("#endpoint-url").wait_for()
        assert page.locator("#endpoint-url").inner_text() == link["endpoint"].url
        assert urlsplit(page.url).path == link["portal"] and link["token"] not in page.url
    finally:
        context.close()
