"""What the browser tests share: headless Chromium (its flags and a module's fixture), a navigation that may go on
by itself, and signing in to the console (in Chromium or with Django's test client)."""
import re
from html import unescape
from urllib.parse import urlencode

import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import sync_playwright

# As root, on a machine whose only network is loopback: no sandbox, and none of Chromium's own
# background connections.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def chromium():
    """One headless Chromium per test module that imports this fixture. Module scope, not
    session: Playwright's sync API keeps an event loop running in this thread while it is open,
    and other modules' browser tests open their own. Django's guard takes that loop for an async
    context; the tests' ORM calls are plain synchronous code (Django's documented escape hatch)."""
    with pytest.MonkeyPatch.context() as patch, sync_playwright() as pw:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


def open_page(page, url, **options):
    """``page.goto`` to a page that navigates on by itself: a form that posts itself on load (a
    SAML answer), a challenge page posted back or retried with a token. On a fast machine that
    next navigation can start before Playwright has seen the first through, and Playwright then
    reports the first as interrupted. Where the browser lands is what the tests check."""
    try:
        page.goto(url, **options)
    except PlaywrightError as error:
        if "interrupted by another navigation" not in str(error):
            raise


# The console signs in through a realm's login page (docs/decisions/0063) -------------------------

CONSOLE = "/admin/master/console/"


def master_admin(password, username="root"):
    """A user of the master realm holding its ``admin`` role: who signs in to the console."""
    from realms.models import Realm, Role
    from realms.users.accounts import create_user

    master = Realm.objects.get(name="master")
    user = create_user(master, username, password=password)
    user.roles.add(Role.objects.get(realm=master, client=None, name="admin"))
    return user


def sign_in_to_console(page, base_url, username, password, *, realm="master", next_path=CONSOLE):
    """Sign a Playwright ``page`` in to the console as a person does: the console sends it to the
    realm's login page, the password is typed and submitted with Enter, and the console's page
    ``next_path`` opens. A second factor or a required action is the caller's to answer: pass
    ``next_path=None`` to return at the page after the password."""
    page.goto(f"{base_url}{CONSOLE}login/?{urlencode({'realm': realm, 'next': next_path or CONSOLE})}")
    page.locator("#username").fill(username)
    if not page.locator("#password").count():  # identity-first (a realm with organizations)
        page.locator("#username").press("Enter")
        page.locator("#password").wait_for()
    page.locator("#password").fill(password)
    page.locator("#password").press("Enter")
    if next_path is not None:
        page.wait_for_url(f"{base_url}{next_path}")


def console_sign_in(http, username, password, *, realm="master", next_path=CONSOLE):
    """The same with Django's test client ``http``: the login page's form posted with the username
    and password (in a realm with organizations, the identity-first page's username first). Returns
    the answer to the password's post: a redirect to ``next_path`` when signed in, the login page
    again when refused."""
    page = http.get(f"{CONSOLE}login/", {"realm": realm, "next": next_path}, follow=True).content.decode()
    if 'name="password"' not in page:
        page = http.post(login_form_action(page), {"username": username}).content.decode()
    return http.post(login_form_action(page), {"username": username, "password": password})


def login_form_action(html):
    """Where the realm's login page posts (Keycloak's ``#kc-form-login``)."""
    form = re.search(r'<form\b[^>]*\bid="kc-form-login"[^>]*>', html)
    assert form, html[:500]
    return unescape(re.search(r'action="([^"]+)"', form.group(0)).group(1))
