"""The identity provider pages as a person uses them, in headless Chromium at a phone's width
(390 px): from the list's "Add provider" to a saved OpenID Connect provider with the keyboard
alone (Tab moves from field to field, Enter saves), the page fitting the screen, no raw message
key and no error page on the way; then a mapper added on its page the same way."""
import re

import pytest
from django.urls import reverse

from realms.models import IdentityProvider, IdentityProviderMapper, Realm, Role
from realms.representation.services import create_realm
from realms.users.accounts import create_user
from tests.browser import CONSOLE, chromium, master_admin, sign_in_to_console  # noqa: F401 (chromium: a fixture)
from tests.oidc.browser.conftest import PASSWORD

from .test_console_pages_browser import RAW_KEY, TEXT

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fresh_caches")]
FITS = "document.documentElement.scrollWidth <= window.innerWidth"
ACTIVE = "() => document.activeElement && document.activeElement.name"


@pytest.fixture
def acme(transactional_db):
    master_admin(PASSWORD)
    return create_realm("acme", admin_events_enabled=True)


@pytest.fixture
def phone(chromium):
    context = chromium.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    page.set_default_timeout(15000)
    statuses = []
    page.on("response", lambda response: statuses.append((response.status, response.url)))
    yield page, statuses
    context.close()


def reads_well(page):
    """What a person would see wrong on the page: wider than the screen, a raw message key."""
    problems = []
    if not page.evaluate(FITS):
        problems.append(f"{page.url}: wider than the screen")
    found = RAW_KEY.search(page.evaluate(TEXT))
    if found:
        problems.append(f"{page.url}: raw message key {found.group(0)!r}")
    return problems


def type_and_tab(page, values):
    """Type each value into the focused field, then Tab to the next, which must be the field named
    next (the page's tab order is the form's)."""
    for (name, value), following in zip(values, [*(n for n, _ in values[1:]), None], strict=True):
        assert page.evaluate(ACTIVE) == name, f"focus on {page.evaluate(ACTIVE)!r}, not {name!r}"
        page.keyboard.type(value)
        if following:
            page.keyboard.press("Tab")


def test_add_an_oidc_provider_with_the_keyboard_at_a_phones_width(phone, live_server, acme):
    page, statuses = phone
    base = live_server.url
    sign_in_to_console(page, base, "root", PASSWORD)
    page.goto(base + reverse("admin:realms_realm_change", args=[acme.pk]))  # work in acme
    page.goto(base + reverse("admin:realms_identityprovider_changelist"))
    assert page.locator("h1").inner_text() == "Identity providers"
    problems = reads_well(page)
    page.get_by_role("link", name="OpenID Connect v1.0").first.click()
    page.wait_for_load_state()
    assert page.locator("h1").inner_text() == "Create identity provider"
    problems += reads_well(page)

    page.locator("input[name=alias]").focus()
    type_and_tab(page, [("alias", "corp"), ("display_name", "Corp SSO"), ("config_guiOrder", "1")])
    page.locator("input[name=config_authorizationUrl]").focus()
    type_and_tab(page, [("config_authorizationUrl", "https://sso.corp.example/authorize"),
                        ("config_tokenUrl", "https://sso.corp.example/token")])
    page.locator("input[name=config_clientId]").focus()
    type_and_tab(page, [("config_clientId", "our-app"), ("config_clientSecret", "s3cret-typed")])
    with page.expect_navigation():
        page.keyboard.press("Enter")  # in the secret's field: Enter saves the provider
    assert "was added successfully" in page.locator("ul.messagelist").inner_text()
    problems += reads_well(page)
    idp = IdentityProvider.objects.get(realm=acme, alias="corp")
    assert (idp.provider_id, idp.display_name, idp.config["clientId"], idp.config["clientSecret"],
            idp.config["guiOrder"]) == ("oidc", "Corp SSO", "our-app", "s3cret-typed", "1")
    assert "s3cret-typed" not in page.content()

    # Its Mappers tab, then a mapper added the same way: the name typed, Enter saves.
    page.goto(base + reverse("admin:realms_identityprovider_change", args=[idp.pk]) + "#mappers")
    page.get_by_role("link", name="Add mapper").click()
    page.wait_for_load_state()
    problems += reads_well(page)
    page.locator("#mapper-type").select_option(label="Hardcoded Attribute")
    page.get_by_role("button", name="Choose").click()
    page.wait_for_load_state()
    page.locator("input[name=name]").focus()
    page.keyboard.type("department")
    page.keyboard.press("Tab")
    assert page.evaluate(ACTIVE) == "property_0"
    page.keyboard.type("department")
    page.keyboard.press("Tab")
    page.keyboard.type("engineering")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert "Mapper department saved." in page.locator("ul.messagelist").inner_text()
    mapper = IdentityProviderMapper.objects.get(identity_provider=idp)
    assert (mapper.mapper_type, mapper.config["attribute"], mapper.config["attribute.value"]) == (
        "hardcoded-attribute-idp-mapper", "department", "engineering")
    assert re.search(r"department", page.locator("#content-main").inner_text())
    problems += reads_well(page)

    assert not [s for s in statuses if s[0] >= 500], statuses
    assert not problems, "\n".join(problems)
