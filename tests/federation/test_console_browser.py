"""LDAP and Kerberos providers configured on the console in headless Chromium, at a desktop's and a
phone's width, as a person does it: the form filled and saved with Enter, the connection and the
bind tested, a full synchronization started and its status followed on the page until it is done,
a mapper edited; a missing edit mode and a wrong bind password answered in English on the page
(never a raw message key, never a server error); a Kerberos provider added and saved."""
import re

import pytest

from federation.models import KerberosComponent, LdapComponent, LdapMapper
from realms.models import User
from realms.representation.bootstrap import ensure_bootstrap_admin
from tests.browser import CHROMIUM_ARGS, sign_in_to_console

from .slapd import PEOPLE, SERVICE_DN, SERVICE_PASSWORD

pytestmark = [pytest.mark.browser]
BASE = "/admin/master/console/federation/ldapcomponent/"
ADMIN, ADMIN_PASSWORD = "ops", "bootstrap-pass-1"


def readable(page):
    """The page's text, checked for what a person must never read."""
    text = page.inner_text("body")
    assert "${" not in text and not re.search(r"\bldapError\w+", text), text
    assert "Server Error" not in text and "Traceback" not in text, text
    return text


def messages(page):
    return " ".join(page.locator("ul.messagelist li").all_inner_texts())


def _browser(p, width):
    browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS)
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.set_default_timeout(15000)
    return browser, page


@pytest.mark.parametrize("width", [1280, 390])
def test_an_ldap_provider_is_configured_tested_and_synced_in_chromium(live_server, realm, directory, settings,
                                                                      width):
    from playwright.sync_api import sync_playwright

    settings.IDP_JOBS_IN_PROCESS = True  # dev mode's runner: the sync runs in a thread of the server
    ensure_bootstrap_admin(ADMIN, ADMIN_PASSWORD)
    directory.add_user("olga", "olga-password")
    directory.add_user("pavel", "pavel-password")
    base = live_server.url
    # No database access below: Playwright's sync API runs an event loop in this thread.
    with sync_playwright() as p:
        browser, page = _browser(p, width)
        try:
            sign_in_to_console(page, base, ADMIN, ADMIN_PASSWORD)
            page.goto(f"{base}{BASE}?realm__id__exact={realm.pk}")  # the realm to work in
            page.goto(f"{base}{BASE}add/")
            page.fill("#id_name", "corp")
            page.fill("#id_connectionUrl", directory.url)
            page.fill("#id_bindDn", SERVICE_DN)
            page.fill("#id_bindCredential", SERVICE_PASSWORD)
            page.fill("#id_usersDn", PEOPLE)
            page.fill("#id_batchSizeForSync", "100")
            # No edit mode chosen: Keycloak's refusal, in English.
            with page.expect_navigation():
                page.press("#id_usersDn", "Enter")
            assert "Edit Mode is mandatory" in readable(page)
            page.select_option("#id_editMode", "WRITABLE")
            page.fill("#id_bindCredential", SERVICE_PASSWORD)  # a password field is never sent back
            with page.expect_navigation():
                page.press("#id_usersDn", "Enter")  # Enter saves
            assert page.url.split("#")[0] == f"{base}{BASE}", page.locator(".errornote, .errorlist").all_inner_texts()
            assert "was added successfully" in readable(page)
            page.get_by_role("link", name="corp", exact=True).click()
            page.wait_for_url(re.compile(r".*/ldapcomponent/[^/]+/change/.*"))
            provider_url = page.url.split("#")[0]
            assert "A value is set" in readable(page) and SERVICE_PASSWORD not in page.content()

            with page.expect_navigation():
                page.get_by_role("button", name="Test connection").click()
            assert "Successfully connected to LDAP." in messages(page)
            with page.expect_navigation():
                page.get_by_role("button", name="Test authentication").click()
            assert f"Successfully authenticated to LDAP as {SERVICE_DN}." in messages(page)

            with page.expect_navigation():
                page.get_by_role("button", name="Synchronize all users").click()
            assert "Synchronize all users: started." in messages(page)
            for _ in range(100):
                if page.get_attribute("#sync-status", "data-state") in ("done", "failed"):
                    break
                page.wait_for_timeout(200)
                page.reload()
            status = page.inner_text("#sync-status")
            assert status.startswith("All users: done at ") and "2 imported users, 0 updated users" in status, status
            readable(page)

            # A mapper, from the provider's Mappers tab; Enter in its field saves it.
            page.get_by_role("tab", name="Mappers").click()
            page.locator("#mapper-list").get_by_role("link", name="email", exact=True).click()
            page.wait_for_url(re.compile(r".*/ldapmapper/[^/]+/change/"))
            readable(page)
            page.fill("#id_ldap\\.attribute", "otherMailbox")
            page.press("#id_ldap\\.attribute", "Enter")
            page.wait_for_url(re.compile(r".*/ldapcomponent/[^/]+/change/#mappers"))
            assert "Mapper email saved." in messages(page)

            # A wrong bind password: saved, then the test says so (no server error).
            page.goto(provider_url)
            page.fill("#id_bindCredential", "not-the-password")
            with page.expect_navigation():
                page.press("#id_bindDn", "Enter")
            assert page.url.split("#")[0] == f"{base}{BASE}" and "was changed successfully" in readable(page)
            page.goto(provider_url)
            with page.expect_navigation():
                page.get_by_role("button", name="Test authentication").click()
            assert "Error when trying to authenticate to LDAP: Invalid credentials" in messages(page)
            readable(page)
        finally:
            browser.close()
    component = LdapComponent.objects.get(realm=realm, name="corp")
    assert component.get("editMode") == "WRITABLE"
    assert User.objects.filter(realm=realm, federation_link=component).count() == 2
    assert LdapMapper.objects.get(parent_id=component.pk, name="email").get("ldap.attribute") == "otherMailbox"


@pytest.mark.parametrize("width", [1280, 390])
def test_a_kerberos_provider_is_added_and_saved_in_chromium(live_server, realm, kdc, width):
    from playwright.sync_api import sync_playwright

    from .kdc import REALM

    ensure_bootstrap_admin(ADMIN, ADMIN_PASSWORD)
    base = live_server.url
    with sync_playwright() as p:
        browser, page = _browser(p, width)
        try:
            sign_in_to_console(page, base, ADMIN, ADMIN_PASSWORD)
            page.goto(f"{base}/admin/master/console/federation/kerberoscomponent/?realm__id__exact={realm.pk}")
            page.goto(f"{base}/admin/master/console/federation/kerberoscomponent/add/")
            page.fill("#id_name", "corp-kerberos")
            page.fill("#id_kerberosRealm", REALM)
            page.fill("#id_serverPrincipal", kdc.service_principal)
            page.check("#id_allowPasswordAuthentication")
            with page.expect_navigation():
                page.press("#id_serverPrincipal", "Enter")
            assert "This field is required." in readable(page)
            page.fill("#id_keyTab", str(kdc.keytab))
            page.press("#id_keyTab", "Enter")
            page.wait_for_url(f"{base}/admin/master/console/federation/kerberoscomponent/")
            assert "was added successfully" in readable(page)
        finally:
            browser.close()
    component = KerberosComponent.objects.get(realm=realm, name="corp-kerberos")
    assert component.get("keyTab") == str(kdc.keytab) and component.get("allowPasswordAuthentication") == "true"
