"""The realm's displayNameHtml heads its login page in a real browser, at phone width: the
formatting shows, a hostile part does nothing, the page still fits and signs in from the keyboard."""
import pytest

from realms.models import Realm, Role
from realms.users.accounts import create_user
from tests.browser import CONSOLE
from tests.oidc.browser.conftest import PASSWORD

from .test_console_signin_browser import FITS, base, chromium  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fresh_caches")]


def test_the_header_at_phone_width(chromium, base):  # noqa: F811
    master = Realm.objects.get(name="master")
    master.display_name_html = ('<div class="kc-logo-text"><span>Acme <b>Identity</b></span></div>'
                                '<img src="x" onerror="window.pwned = 1"><script>window.pwned = 2</script>')
    master.save()
    admin = create_user(master, "root", password=PASSWORD)
    admin.roles.add(Role.objects.get(realm=master, client=None, name="admin"))
    context = chromium.new_context(viewport={"width": 390, "height": 844})
    try:
        page = context.new_page()
        page.set_default_timeout(15000)
        page.goto(f"{base}{CONSOLE}")
        page.locator("#kc-form-login").wait_for()
        header = page.locator("#kc-header-wrapper")
        assert header.inner_text().strip().lower() == "acme identity"
        assert header.locator("b").inner_text().lower() == "identity"
        assert page.evaluate("window.pwned") is None and page.locator("img").count() == 0
        assert page.evaluate(FITS)
        page.locator("#username").fill("root")
        page.keyboard.press("Tab")
        page.keyboard.type(PASSWORD)
        page.keyboard.press("Enter")
        page.wait_for_url(f"{base}{CONSOLE}")
    finally:
        context.close()
