"""The console's Shared Signals switches in headless Chromium at a phone's width, by the keyboard:
the realm's transmitter switched on under Authentication policies (Space toggles, Enter saves),
then a client made a receiver under its Advanced tab; the discovery document answers once the
realm is a transmitter. No raw message key, nothing wider than the screen, no error page."""
import pytest
from django.test import Client as HttpClient
from django.urls import reverse

from realms.models import Client, Realm, Role
from realms.representation.services import create_realm
from realms.users.accounts import create_user
from tests.browser import chromium, master_admin, sign_in_to_console  # noqa: F401 (chromium: a fixture)
from tests.oidc.browser.conftest import PASSWORD
from tests.realms.test_console_identity_providers_browser import phone, reads_well  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fresh_caches")]


@pytest.fixture(autouse=True)
def ssf_feature(settings):
    settings.IDP_FEATURES = "ssf"


@pytest.fixture
def acme(transactional_db):
    master_admin(PASSWORD)
    return create_realm("acme")


def _toggle_and_save(page, tab, checkbox):
    page.get_by_role("tab", name=tab).click()
    page.locator(checkbox).focus()
    page.keyboard.press("Space")
    assert page.locator(checkbox).is_checked()
    with page.expect_navigation():
        page.keyboard.press("Enter")


def test_switch_on_the_transmitter_and_a_receiver_by_the_keyboard_on_a_phone(phone, live_server, acme):
    page, statuses = phone
    base = live_server.url
    assert HttpClient().get("/realms/acme/.well-known/ssf-configuration").status_code == 404
    sign_in_to_console(page, base, "root", PASSWORD)
    page.goto(base + reverse("admin:realms_realm_change", args=[acme.pk]))
    problems = reads_well(page)
    _toggle_and_save(page, "Authentication policies", "#id_ssf_transmitter_enabled")
    problems += reads_well(page)
    acme.refresh_from_db()
    assert acme.attributes["ssf.transmitterEnabled"] == "true"
    assert HttpClient().get("/realms/acme/.well-known/ssf-configuration").json()["issuer"].endswith("/realms/acme")

    receiver = Client.objects.create(realm=acme, client_id="rx", service_accounts_enabled=True)
    page.goto(base + reverse("admin:realms_client_change", args=[receiver.pk]))
    problems += reads_well(page)
    _toggle_and_save(page, "Advanced", "#id_ssf_enabled")
    problems += reads_well(page)
    receiver.refresh_from_db()
    assert receiver.attributes["ssf.enabled"] == "true"
    assert problems == []
    assert not [s for s in statuses if s[0] >= 500]


def test_a_streams_webhook_is_read_only_in_the_console_and_named_in_words_in_the_portal(phone, live_server, acme):
    """The stream's endpoint shows in the realm's webhook list (its delivery log is useful) with the
    receiver it belongs to, a link to that client, and no way to edit or delete it; its portal
    names the envelope in words and offers no event types or test event."""
    from oidc.ssf import streams
    from webhooks import portal

    page, statuses = phone
    base = live_server.url
    rx = Client.objects.create(realm=acme, client_id="rx", service_accounts_enabled=True, attributes={"ssf.enabled": "true"})
    stream = streams.create(rx, f"{base}/realms/acme", {"delivery": {"method": "urn:ietf:rfc:8936"}})
    endpoint = stream.endpoint
    sign_in_to_console(page, base, "root", PASSWORD)
    page.goto(base + reverse("admin:realms_realm_change", args=[acme.pk]))  # work in acme
    page.goto(base + reverse("admin:webhooks_endpoint_changelist") + f"?realm__id__exact={acme.pk}")
    problems = reads_well(page)
    owner = page.get_by_role("link", name="the Shared Signals stream of client rx (managed through the SSF stream API)")
    owner.focus()
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.url.endswith(reverse("admin:realms_client_change", args=[rx.pk]) + "#advanced")
    assert page.locator("#id_ssf_enabled").is_visible() and page.locator("#id_ssf_enabled").is_checked()
    page.goto(base + reverse("admin:webhooks_endpoint_change", args=[endpoint.pk]))
    problems += reads_well(page)
    assert page.locator("input[name=url], select[name=envelope]").count() == 0  # shown, not a form
    assert page.get_by_role("link", name="Delete").count() == 0
    assert "Shared Signals stream of client rx" in page.locator("#content").inner_text()
    page.goto(base + reverse("admin:webhooks_endpoint_delete", args=[endpoint.pk]))  # refused, not a 500
    assert endpoint.__class__.objects.filter(pk=endpoint.pk).exists()

    url, _ = portal.issue_link(None, endpoint, expires_in=600)
    page.goto(base + url[url.index("/realms/"):])
    problems += reads_well(page)
    assert page.locator("#endpoint-envelope").inner_text() == "Shared Signals (Security Event Tokens, SET)"
    assert "secevent" not in page.locator("main").inner_text()
    assert page.locator("#send-test, #save-types").count() == 0
    assert "the receiver chooses its events through the stream" in page.locator("#types-managed").inner_text()
    page.locator("#pause").focus()  # what the portal still does for it: pause, redeliver, rotate
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.locator("#notice").inner_text() and page.locator("#resume").count() == 1
    problems += reads_well(page)
    assert problems == []
    assert not [s for s in statuses if s[0] >= 500]
