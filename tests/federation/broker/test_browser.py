"""Identity brokering in headless Chromium, panva's oidc-provider as the upstream OpenID Connect
provider (one per run) and our live server: the login page's button; ``kc_idp_hint``; the
``identity-provider-redirector`` step's default provider; a first login that creates the user
through the review-profile page; a first login linked to an existing account after its password
and one-time code, typed with the keyboard; no automatic linking unless configured; the second
login through the link; logout both ways (ours through the provider's end_session, the provider's
back-channel logout ending ours); an organization member sent to their provider by the e-mail's
domain, whose access token names the organization.

Every page of ours a test stops on is checked for raw message keys in its visible text, and no
answer in the whole trip (ours or the provider's) is a 5xx. The login page with providers is also
looked at on a phone (390 px): nothing wider than the screen."""
import base64
import json
import re
import time
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import requests

from realms.data import realm_cache
from realms.models import (
    AuthenticationExecution,
    AuthenticatorConfig,
    FederatedIdentity,
    Organization,
    OrganizationDomain,
    OrganizationIdentityProvider,
    OrganizationMember,
    User,
    UserSession,
)
from realms.users.accounts import create_user
from tests.browser import chromium  # noqa: F401 (a fixture)
from tests.federation.broker.conftest import _loopback, make_idp, upstream  # noqa: F401 (fixtures)
from tests.federation.broker.test_end_to_end import base, live_idp, realm  # noqa: F401 (fixtures)
from tests.oidc.browser.conftest import make_client
from tests.realms.test_account_console_browser import _no_horizontal_scroll
from tests.realms.test_otp import add_otp, app_totp

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("fresh_caches")]
ALIAS = "upstream"
PASSWORD = "a local password 42"
WAIT = 10000

# A message key shown instead of its text: a template placeholder, a bare camelCase word of three
# parts or more (identityProviderUnexpectedErrorMessage, doLogIn), or of two ending as keys do
# (loginTitle, usernameOrEmail is caught by the first rule).
RAW_KEY = re.compile(r"\$\{|\b[a-z]+(?:[A-Z][a-z0-9]*){2,}\b"
                     r"|\b[a-z]+(?:Message|Title|Label|Error|Text|Link|Button|Hint|Header|Placeholder)\b")


APP = "/app/cb"  # the application's redirect URI, on our live server (Chromium reaches it; nothing answers there)


@pytest.fixture
def app(realm, base):  # noqa: F811
    return make_client(realm, "web-app", redirect_uris=[base + APP], attributes={"post.logout.redirect.uris": "+"})


def auth_url(base, **extra):  # noqa: F811
    return f"{base}/realms/acme/protocol/openid-connect/auth?" + urlencode({
        "client_id": "web-app", "response_type": "code", "scope": "openid", "state": "st", "redirect_uri": base + APP,
        **extra})


class Trip:
    """A browser context of its own (its own cookies at both ends) at ``width``; every answer's
    status kept."""

    def __init__(self, chromium, base, width):  # noqa: F811
        self.base = base
        self.context = chromium.new_context(viewport={"width": width, "height": 800})
        self.page = self.context.new_page()
        self.answers = []
        self.page.on("response", lambda response: self.answers.append((response.status, response.url)))

    def ours(self, *, title=None):
        """The page is one of ours and shows no raw message key."""
        page = self.page
        page.wait_for_url(f"{self.base}/**", timeout=WAIT)
        page.wait_for_load_state()
        text = page.locator("body").inner_text()
        assert not RAW_KEY.search(text), (page.url, RAW_KEY.search(text).group(0), text[:500])
        if title is not None:
            assert title in text, text[:500]
        return text

    def our_pages(self):
        """The pages of ours the browser was shown (redirects and style sheets aside)."""
        return [url for status, url in self.answers
                if status == 200 and url.startswith(self.base) and not url.startswith(f"{self.base}/static/")]

    def at_provider(self, upstream):  # noqa: F811
        self.page.locator("input[name=login]").wait_for(timeout=WAIT)
        assert self.page.url.startswith(upstream.issuer), self.page.url

    def provider_sign_in(self, upstream, login):  # noqa: F811
        """oidc-provider's development login form, typed and submitted with Enter."""
        self.at_provider(upstream)
        self.page.locator("input[name=login]").fill(login)
        self.page.locator("input[name=password]").fill("any")
        self.page.locator("input[name=password]").press("Enter")
        self.page.wait_for_url(lambda url: not url.startswith(upstream.issuer), timeout=WAIT)

    def code(self):
        """Back at the application: the code it got."""
        self.page.wait_for_url(f"{self.base}{APP}?**", timeout=WAIT)
        query = parse_qs(urlsplit(self.page.url).query)
        assert query["state"] == ["st"] and "error" not in query, self.page.url
        return query["code"][0]

    def no_server_errors(self):
        assert [a for a in self.answers if a[0] >= 500] == []


@pytest.fixture
def trip(chromium, base):  # noqa: F811
    """``trip(width=1024)``: a new browser context; its answers checked for 5xx at the end."""
    trips = []

    def make(width=1024):
        trips.append(Trip(chromium, base, width))
        return trips[-1]

    yield make
    for made in trips:
        made.context.close()
    for made in trips:
        made.no_server_errors()


def tokens(base, code):  # noqa: F811
    answer = requests.post(f"{base}/realms/acme/protocol/openid-connect/token", data={
        "grant_type": "authorization_code", "code": code, "redirect_uri": base + APP, "client_id": "web-app",
        "client_secret": "secret-of-web-app"}, timeout=10)
    assert answer.status_code == 200, answer.text
    return answer.json()


def claims_of(token):
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def step_config(realm, alias, **config):  # noqa: F811
    """Change the realm's stored authenticator config ``alias``."""
    stored = AuthenticatorConfig.objects.get(realm=realm, alias=alias)
    stored.config = {**stored.config, **config}
    stored.save()
    realm_cache.clear()


# 1, 7: the button, then the link reused --------------------------------------------------------

def test_raw_key_check_catches_keys():
    for text in ("${identityProviderUnexpectedErrorMessage}", "Error: identityProviderUnexpectedErrorMessage",
                 "doLogIn", "loginTitle", "usernameOrEmail"):
        assert RAW_KEY.search(text), text
    for text in ("Sign in to your account", "Username or email", "ada@upstream.example", "grace.local"):
        assert not RAW_KEY.search(text), text


def test_the_button_signs_in_through_the_provider_and_the_second_login_reuses_the_link(
        live_idp, base, realm, upstream, trip):  # noqa: F811
    # The review page on every first login, so the second login's lack of one says the link was used.
    step_config(realm, "review profile config", **{"update.profile.on.first.login": "on"})
    live_idp(fields={"trust_email": True, "display_name": "Upstream Corp"})
    phone = trip(width=390)
    phone.page.goto(auth_url(base))
    phone.ours(title="Upstream Corp")
    button = phone.page.locator(f"#social-{ALIAS}")
    assert button.is_visible() and "Upstream Corp" in button.inner_text()
    _no_horizontal_scroll(phone.page)
    box = button.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390
    login_page = phone.our_pages()
    button.click()
    phone.provider_sign_in(upstream, "ada")
    phone.page.locator("#kc-update-profile-form").wait_for(timeout=WAIT)
    phone.ours()
    _no_horizontal_scroll(phone.page)
    phone.page.locator("input[name=lastName]").press("Enter")
    assert tokens(base, phone.code())["access_token"]
    assert len(phone.our_pages()[len(login_page):]) == 1  # the review page
    ada = User.objects.get(realm=realm, username="ada")
    assert ada.email == "ada@upstream.example" and ada.email_verified
    assert FederatedIdentity.objects.get(user=ada).identity_provider.alias == ALIAS

    # Another browser: the provider's login again, then straight to the application through the
    # link (no first broker login page), the same user.
    second = trip()
    second.page.goto(auth_url(base))
    login_page = second.our_pages()
    second.page.locator(f"#social-{ALIAS}").click()
    second.provider_sign_in(upstream, "ada")
    issued = tokens(base, second.code())
    assert second.our_pages()[len(login_page):] == []  # no page of ours between the provider and the application
    assert claims_of(issued["access_token"])["sub"] == ada.pk
    assert User.objects.filter(realm=realm).count() == 1 and FederatedIdentity.objects.count() == 1
    assert UserSession.objects.filter(user=ada).count() == 2


# 2, 3: the hint and the redirector go straight to the provider -------------------------------

def test_kc_idp_hint_goes_straight_to_the_provider(live_idp, base, realm, upstream, trip):  # noqa: F811
    live_idp(fields={"trust_email": True})
    browser = trip()
    browser.page.goto(auth_url(base, kc_idp_hint=ALIAS))
    browser.at_provider(upstream)
    assert not browser.our_pages()
    browser.provider_sign_in(upstream, "ada")
    assert tokens(base, browser.code())["access_token"]


def test_the_redirectors_default_provider_goes_straight_there(live_idp, base, realm, upstream, trip):  # noqa: F811
    live_idp(fields={"trust_email": True})
    redirector = AuthenticationExecution.objects.get(realm=realm, flow__alias="browser",
                                                     authenticator="identity-provider-redirector")
    redirector.authenticator_config = AuthenticatorConfig.objects.create(
        realm=realm, alias="to upstream", config={"defaultProvider": ALIAS})
    redirector.save()
    realm_cache.clear()
    browser = trip()
    browser.page.goto(auth_url(base))
    browser.at_provider(upstream)
    assert not browser.our_pages()
    browser.provider_sign_in(upstream, "ada")
    assert tokens(base, browser.code())["access_token"]


def test_without_the_default_provider_the_login_page_shows(live_idp, base, realm, trip):  # noqa: F811
    """The counterpart of the two above: no hint, no default: our login page, with the button."""
    live_idp()
    browser = trip()
    browser.page.goto(auth_url(base))
    browser.page.locator("#username").wait_for(timeout=WAIT)
    browser.ours()
    assert browser.page.locator(f"#social-{ALIAS}").is_visible()


# 4: first login creates the user, through the review page -----------------------------------

def test_first_login_creates_the_user_after_the_review_page(live_idp, base, realm, upstream, trip):  # noqa: F811
    step_config(realm, "review profile config", **{"update.profile.on.first.login": "on"})
    live_idp(fields={"trust_email": True})
    browser = trip()
    browser.page.goto(auth_url(base))
    browser.page.locator(f"#social-{ALIAS}").click()
    browser.provider_sign_in(upstream, "margaret")
    form = browser.page.locator("#kc-update-profile-form")
    form.wait_for(timeout=WAIT)
    browser.ours()
    # Pre-filled from the provider's claims; nothing created yet.
    assert browser.page.locator("input[name=email]").input_value() == "margaret@upstream.example"
    assert browser.page.locator("input[name=firstName]").input_value() == "Margaret"
    assert not User.objects.filter(realm=realm).exists()
    browser.page.locator("input[name=lastName]").fill("Hamilton")
    browser.page.locator("input[name=lastName]").press("Enter")
    assert tokens(base, browser.code())["access_token"]
    user = User.objects.get(realm=realm)
    assert (user.username, user.email, user.first_name, user.last_name) == (
        "margaret", "margaret@upstream.example", "Margaret", "Hamilton")
    assert user.email_verified  # the e-mail kept as the trusted provider gave it
    assert FederatedIdentity.objects.get(user=user).subject == "margaret"


# 5, 6: an existing account with the same e-mail ----------------------------------------------

def test_first_login_links_an_existing_account_after_its_password_and_code_with_the_keyboard(
        live_idp, base, realm, upstream, trip):  # noqa: F811
    grace = create_user(realm, "grace.local", password=PASSWORD, email="grace@upstream.example", first_name="Grace",
                        last_name="Local")
    add_otp(grace)
    live_idp(fields={"trust_email": True})
    browser = trip()
    page = browser.page
    page.goto(auth_url(base))
    page.locator(f"#social-{ALIAS}").focus()
    page.keyboard.press("Enter")
    browser.provider_sign_in(upstream, "grace")
    page.locator("#linkAccount").wait_for(timeout=WAIT)
    browser.ours(title="User with email grace@upstream.example already exists.")
    page.keyboard.press("Enter")  # "Add to existing account" has the focus
    page.locator("#password").wait_for(timeout=WAIT)
    browser.ours()
    assert page.locator("#username").input_value() == "grace.local"
    page.locator("#password").focus()
    page.keyboard.type(PASSWORD)
    page.keyboard.press("Enter")
    otp = page.locator("input[name=otp]")
    otp.wait_for(timeout=WAIT)
    browser.ours()
    assert not FederatedIdentity.objects.exists()  # the password alone links nothing
    otp.focus()
    page.keyboard.type(app_totp().now())
    page.keyboard.press("Enter")
    issued = tokens(base, browser.code())
    assert claims_of(issued["access_token"])["sub"] == grace.pk
    link = FederatedIdentity.objects.get()
    assert (link.user_id, link.subject) == (grace.pk, "grace")
    assert User.objects.filter(realm=realm).count() == 1


def test_automatic_linking_is_off_by_default(live_idp, base, realm, upstream, trip):  # noqa: F811
    """Even with the provider's e-mail trusted and verified, an account with that e-mail is never
    linked silently: "Account already exists", and no link, no session, until the person
    confirms; choosing to review the profile instead (another e-mail) makes a new account."""
    grace = create_user(realm, "grace.local", password=PASSWORD, email="grace@upstream.example")
    live_idp(fields={"trust_email": True})
    browser = trip()
    browser.page.goto(auth_url(base))
    browser.page.locator(f"#social-{ALIAS}").click()
    browser.provider_sign_in(upstream, "grace")
    browser.page.locator("#linkAccount").wait_for(timeout=WAIT)
    browser.ours(title="Account already exists")
    assert not FederatedIdentity.objects.exists() and not UserSession.objects.exists()
    assert not [url for _, url in browser.answers if url.startswith(base + APP)]
    browser.page.locator("#updateProfile").click()
    browser.page.locator("#kc-update-profile-form").wait_for(timeout=WAIT)
    browser.ours()
    assert not FederatedIdentity.objects.exists()
    browser.page.locator("input[name=email]").fill("grace@elsewhere.example")
    browser.page.locator("input[name=email]").press("Enter")
    tokens(base, browser.code())
    link = FederatedIdentity.objects.get()
    assert link.user_id != grace.pk and link.user.email == "grace@elsewhere.example"
    assert not FederatedIdentity.objects.filter(user=grace).exists()


# 8: logout both ways --------------------------------------------------------------------------

def test_our_logout_goes_through_the_providers_end_session_and_comes_back(
        live_idp, base, realm, upstream, trip):  # noqa: F811
    live_idp(fields={"trust_email": True})
    browser = trip()
    page = browser.page
    page.goto(auth_url(base, kc_idp_hint=ALIAS))
    browser.provider_sign_in(upstream, "ada")
    id_token = tokens(base, browser.code())["id_token"]
    assert UserSession.objects.filter(realm=realm).count() == 1
    page.goto(f"{base}/realms/acme/protocol/openid-connect/logout?" + urlencode({
        "id_token_hint": id_token, "post_logout_redirect_uri": base + APP, "state": "bye"}))
    # At the provider's end_session: it asks the person to confirm.
    page.wait_for_url(f"{upstream.discovery['end_session_endpoint']}**", timeout=WAIT)
    assert not UserSession.objects.filter(realm=realm).exists()
    page.locator("button[name=logout][value=yes]").click()
    page.wait_for_url(f"{base}{APP}?state=bye", timeout=WAIT)
    ends = [url for _, url in browser.answers if url.startswith(base) and "/logout_response" in url]
    assert ends, browser.answers  # back through our broker endpoint
    # Both sessions ended: our login page, then the provider's login form again.
    page.goto(auth_url(base))
    page.locator("#username").wait_for(timeout=WAIT)
    browser.ours()
    page.locator(f"#social-{ALIAS}").click()
    browser.at_provider(upstream)


def test_the_providers_back_channel_logout_ends_our_session(live_idp, base, realm, upstream, trip):  # noqa: F811
    live_idp(fields={"trust_email": True})
    browser = trip()
    page = browser.page
    page.goto(auth_url(base, kc_idp_hint=ALIAS))
    browser.provider_sign_in(upstream, "ada")
    tokens(base, browser.code())
    # Signed in here: a new authorization request goes straight back with a code.
    page.goto(auth_url(base))
    browser.code()
    assert UserSession.objects.filter(realm=realm).count() == 1
    # The person signs out at the provider; it tells our endpoint server to server.
    page.goto(upstream.discovery["end_session_endpoint"])
    page.locator("button[name=logout][value=yes]").click()
    page.wait_for_load_state()
    deadline = time.monotonic() + 10
    while UserSession.objects.filter(realm=realm).exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not UserSession.objects.filter(realm=realm).exists(), "".join(upstream.log[-10:])
    page.goto(auth_url(base))
    page.locator("#username").wait_for(timeout=WAIT)
    browser.ours()
    assert page.url.startswith(f"{base}/realms/acme/")


# 9: organization member by e-mail domain -----------------------------------------------------

def test_an_organization_member_is_sent_to_their_provider_by_email_domain(
        live_idp, base, realm, upstream, trip):  # noqa: F811
    realm.organizations_enabled = True
    realm.save()
    corp = Organization.objects.create(realm=realm, name="Upstream Inc", alias="upstream-inc")
    OrganizationDomain.objects.create(realm=realm, organization=corp, name="upstream.example")
    idp = live_idp(fields={"trust_email": True}, loginHint="true")
    OrganizationIdentityProvider.objects.create(organization=corp, identity_provider=idp, domain="upstream.example",
                                                redirect_when_email_matches=True)
    realm_cache.clear()
    browser = trip(width=390)
    page = browser.page
    page.goto(auth_url(base, scope="openid organization"))
    username = page.locator("#username")
    username.wait_for(timeout=WAIT)
    browser.ours()
    assert page.locator("#password").count() == 0  # identity-first: the e-mail first
    _no_horizontal_scroll(page)
    username.fill("ada@upstream.example")
    username.press("Enter")
    browser.at_provider(upstream)  # no password asked here
    sent = [url for _, url in browser.answers if url.startswith(upstream.discovery["authorization_endpoint"])]
    assert parse_qs(urlsplit(sent[0]).query)["login_hint"] == ["ada@upstream.example"]
    browser.provider_sign_in(upstream, "ada")
    access = claims_of(tokens(base, browser.code())["access_token"])
    ada = User.objects.get(realm=realm, username="ada")
    assert access["sub"] == ada.pk and access["organization"] == ["upstream-inc"]
    assert OrganizationMember.objects.get(organization=corp, user=ada).membership_type == OrganizationMember.MANAGED
