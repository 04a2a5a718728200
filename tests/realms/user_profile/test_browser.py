"""The registration page with a profile attribute in headless Chromium at a phone's width, keyboard
only: the attribute's group and field shown, a value its validators refuse answered with the
text next to the field, then accepted with Enter; no horizontal scroll, no serious axe violation."""
import copy

import pytest

from realms.models import User
from realms.representation.services import create_realm
from realms.users.profile import config as upconfig
from tests.browser import chromium  # noqa: F401 (a fixture)
from tests.oidc.browser.conftest import PASSWORD, make_client
from tests.realms.test_account_console_browser import _no_horizontal_scroll, _no_serious_violations, base, page  # noqa: F401

from .conftest import DEPARTMENT, profile_with

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def acme(transactional_db, base, fresh_caches):  # noqa: F811
    realm = create_realm("acme")
    realm.registration_allowed = True
    realm.save()
    make_client(realm, "web-app", redirect_uris=[f"{base}/web-app/cb"])
    upconfig.store(realm, profile_with(copy.deepcopy(DEPARTMENT)))
    return realm


def test_register_with_a_profile_attribute_on_a_phone(acme, base, page):  # noqa: F811
    page.route(f"{base}/web-app/**", lambda route: route.fulfill(status=200, body="the application"))
    page.goto(f"{base}/realms/acme/protocol/openid-connect/auth?client_id=web-app&response_type=code"
              f"&scope=openid&redirect_uri={base}/web-app/cb")
    page.locator("#kc-register").click()
    page.locator("#department").wait_for(timeout=10000)
    assert page.locator("#group-work legend").inner_text() == "Work"
    for field, value in (("username", "alice"), ("email", "alice@example.com"), ("firstName", "Alice"),
                         ("lastName", "Liddell"), ("department", "sales"), ("password", PASSWORD),
                         ("password-confirm", PASSWORD)):
        page.locator(f"#{field}").fill(value)
    page.locator("#password-confirm").press("Enter")
    page.locator("#input-error-department").wait_for(timeout=10000)
    assert page.locator("#input-error-department").inner_text() == "Invalid value."
    assert page.locator("#department").get_attribute("aria-describedby") == "input-error-department"
    _no_horizontal_scroll(page)
    _no_serious_violations(page)
    page.locator("#department").fill("Sales")
    page.locator("#password").fill(PASSWORD)
    page.locator("#password-confirm").fill(PASSWORD)
    page.locator("#password-confirm").press("Enter")
    page.wait_for_url(f"{base}/web-app/cb?*", timeout=10000)
    assert User.objects.get(realm=acme, username="alice").attributes == {"department": ["Sales"]}
