"""End to end over HTTP: our live server, panva's oidc-provider on its own loopback port, a
browser without JavaScript (requests) on each side. The login page's button and ``kc_idp_hint``
send the sign-in upstream; the provider's answer at our broker endpoint is exchanged, checked and
joined to first broker login, which creates and links the user; our client gets our tokens; a
second sign-in goes through the link. Logout both ways: ours through the provider's end_session
(front channel) or server to server, and the provider's back-channel logout ending our session."""
import html
import re
import time
from urllib.parse import urljoin

import pytest
import requests

from realms.models import FederatedIdentity, User, UserSession
from realms.representation.services import create_realm

from ...oidc.browser.conftest import make_client
from .conftest import ALIAS, query_of
from .upstream import JsonServer

REDIRECT = "https://app.example/cb"


@pytest.fixture
def realm(transactional_db):
    return create_realm("acme", events_enabled=True)


@pytest.fixture
def base(live_server):
    return live_server.url.replace("localhost", "127.0.0.1")


@pytest.fixture
def app(realm):
    return make_client(realm, "web-app", redirect_uris=[REDIRECT], attributes={"post.logout.redirect.uris": "+"})


@pytest.fixture
def live_idp(upstream, make_idp, base, app):
    """``live_idp(fields=None, client_metadata=None, **config)``: a client registered upstream with our
    live endpoint as its redirect URI, and the realm's provider using it."""

    def make(fields=None, client_metadata=None, **config):
        client = upstream.register(f"{base}/realms/acme/broker/{ALIAS}/endpoint", **(client_metadata or {}))
        return make_idp(upstream.config(client, **config), fields=fields)

    return make


def new_browser():
    browser = requests.Session()
    browser.trust_env = False
    return browser


def auth_url(base):
    return (f"{base}/realms/acme/protocol/openid-connect/auth?client_id=web-app&response_type=code&scope=openid"
            f"&state=st&redirect_uri={REDIRECT}")


def sign_in(browser, base, upstream, *, login="ada", via_button=True, upstream_browser=None):
    """Our login page -> upstream's login form -> our endpoint: our answer there."""
    if via_button:
        page = browser.get(auth_url(base), timeout=10)
        link = html.unescape(re.search(r'id="social-upstream" class="social" href="([^"]+)"', page.text).group(1))
        sent = browser.get(base + link, timeout=10, allow_redirects=False)
    else:
        sent = browser.get(auth_url(base) + f"&kc_idp_hint={ALIAS}", timeout=10, allow_redirects=False)
    assert sent.status_code == 302 and sent.headers["Location"].startswith(upstream.issuer), sent.text[:300]
    back = upstream.sign_in(sent.headers["Location"], login, session=upstream_browser)
    return browser.get(back, timeout=10, allow_redirects=False)


def tokens(base, back):
    location = back.headers.get("Location", "")
    assert back.status_code == 302 and location.startswith(REDIRECT + "?"), (back.status_code, back.text[:500])
    answer = requests.post(f"{base}/realms/acme/protocol/openid-connect/token", data={
        "grant_type": "authorization_code", "code": query_of(location)["code"], "redirect_uri": REDIRECT,
        "client_id": "web-app", "client_secret": "secret-of-web-app"}, timeout=10)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_first_sign_in_creates_and_links_the_user_then_the_link_is_reused(live_idp, base, realm, upstream):
    live_idp(fields={"trust_email": True}, pkceEnabled="true")
    issued = tokens(base, sign_in(new_browser(), base, upstream))
    assert issued["access_token"] and issued["id_token"]
    user = User.objects.get(realm=realm, username="ada")
    assert (user.email, user.email_verified, user.first_name, user.last_name) == (
        "ada@upstream.example", True, "Ada", "Upstream")
    link = FederatedIdentity.objects.get(user=user)
    assert (link.identity_provider.alias, link.subject, link.user_name) == (ALIAS, "ada", "ada")
    session = UserSession.objects.get(user=user)
    assert session.notes["identity_provider"] == ALIAS and session.notes["FEDERATED_SUB"] == "ada"
    assert session.notes["FEDERATED_ID_TOKEN"].count(".") == 2 and session.notes["FEDERATED_SID"]
    # Another browser, straight from kc_idp_hint: the same user through the link.
    assert tokens(base, sign_in(new_browser(), base, upstream, via_button=False))["access_token"]
    assert User.objects.filter(realm=realm).count() == 1 and UserSession.objects.filter(user=user).count() == 2


def test_a_refused_answer_is_shown_on_our_login_page(live_idp, base, realm, upstream):
    live_idp(clientSecret="not-the-secret")
    page = sign_in(new_browser(), base, upstream, via_button=False)
    if page.status_code == 302:
        page = requests.get(urljoin(base, page.headers["Location"]), cookies=page.cookies, timeout=10)
    assert 'id="kc-broker-error"' in page.text
    assert "Unexpected error when authenticating with identity provider" in page.text
    assert "invalid_client" not in page.text and not User.objects.filter(realm=realm).exists()


def logout_url(base, id_token):
    return (f"{base}/realms/acme/protocol/openid-connect/logout?id_token_hint={id_token}"
            f"&post_logout_redirect_uri={REDIRECT}&state=bye")


def confirm_upstream_logout(upstream_browser, page):
    """oidc-provider asks the person to confirm: its form, posted with ``logout=yes``."""
    form = re.search(r'<form[^>]*id="op.logoutForm"[^>]*>(.*?)</form>', page.text, re.S)
    action = re.search(r'action="([^"]+)"', form.group(0)).group(1)
    fields = dict(re.findall(r'name="([^"]+)" value="([^"]*)"', form.group(1)))
    return upstream_browser.post(urljoin(page.url, action), data={**fields, "logout": "yes"}, timeout=10,
                                 allow_redirects=False)


def test_our_logout_goes_through_the_provider(live_idp, base, realm, upstream):
    live_idp()
    browser, upstream_browser = new_browser(), new_browser()
    issued = tokens(base, sign_in(browser, base, upstream, upstream_browser=upstream_browser))
    id_token_upstream = UserSession.objects.get(realm=realm).notes["FEDERATED_ID_TOKEN"]
    page = browser.get(logout_url(base, issued["id_token"]), timeout=10, allow_redirects=False)
    assert not UserSession.objects.filter(realm=realm).exists()
    location = page.headers["Location"]
    assert location.startswith(upstream.discovery["end_session_endpoint"] + "?")
    query = query_of(location)
    assert query["id_token_hint"] == id_token_upstream and "client_id" not in query
    assert query["post_logout_redirect_uri"].startswith(f"{base}/realms/acme/broker/{ALIAS}/endpoint/logout_response")
    confirm = upstream_browser.get(location, timeout=10)
    done = confirm_upstream_logout(upstream_browser, confirm)
    assert done.status_code in (302, 303)
    back = done.headers["Location"]
    assert back.startswith(f"{base}/realms/acme/broker/{ALIAS}/endpoint/logout_response?")
    finished = browser.get(back, timeout=10, allow_redirects=False)
    assert finished.status_code == 302 and finished.headers["Location"] == f"{REDIRECT}?state=bye"
    # The provider's session ended too: a new sign-in there shows its login form again (while
    # its session lived, it sent the browser straight back to us).
    sent = browser.get(auth_url(base) + f"&kc_idp_hint={ALIAS}", timeout=10, allow_redirects=False)
    interaction = upstream_browser.get(sent.headers["Location"], timeout=10)
    assert interaction.url.startswith(upstream.issuer) and 'name="login"' in interaction.text


@pytest.fixture(scope="module")
def logout_receiver():
    server = JsonServer()
    yield server
    server.stop()


def test_back_channel_logout_to_the_provider(live_idp, base, realm, upstream, logout_receiver):
    logout_receiver.reset()
    logout_receiver.routes["/logout"] = (200, {})
    live_idp(backchannelSupported="true", logoutUrl=f"{logout_receiver.base}/logout", sendClientIdOnLogout="true")
    browser = new_browser()
    issued = tokens(base, sign_in(browser, base, upstream))
    notes = UserSession.objects.get(realm=realm).notes
    page = browser.get(logout_url(base, issued["id_token"]), timeout=10, allow_redirects=False)
    assert page.status_code == 302 and page.headers["Location"] == f"{REDIRECT}?state=bye"  # the browser stays
    [call] = logout_receiver.hits("/logout")
    assert call["method"] == "GET" and call["query"]["id_token_hint"] == [notes["FEDERATED_ID_TOKEN"]]
    assert call["query"]["client_id"] and call["query"]["state"] == [notes["FEDERATED_SID"]]


def test_the_providers_back_channel_logout_ends_our_session(live_idp, base, realm, upstream):
    live_idp()
    browser, upstream_browser = new_browser(), new_browser()
    tokens(base, sign_in(browser, base, upstream, upstream_browser=upstream_browser))
    other = new_browser()
    tokens(base, sign_in(other, base, upstream, login="grace"))
    assert UserSession.objects.filter(realm=realm).count() == 2
    # The person signs out at the provider: it tells our endpoint server to server.
    confirm = upstream_browser.get(upstream.discovery["end_session_endpoint"], timeout=10)
    done = confirm_upstream_logout(upstream_browser, confirm)
    assert done.status_code in (200, 302, 303)
    deadline = time.monotonic() + 10  # the provider's call may come after its answer to the browser
    while UserSession.objects.filter(realm=realm).count() > 1 and time.monotonic() < deadline:
        time.sleep(0.1)
    print("".join(upstream.log[-10:]))
    [left] = UserSession.objects.filter(realm=realm)
    assert left.user.username == "grace"  # only the session the provider ended


def test_first_sign_in_runs_the_claim_mappers(live_idp, base, realm, upstream):
    import json

    from realms.models import Group, Role

    idp = live_idp(fields={"trust_email": True})
    role = Role.objects.create(realm=realm, name="developer")
    group = Group.objects.create(realm=realm, name="engineering")
    for name, mapper_type, config in (
        ("groups", "oidc-user-attribute-idp-mapper", {"claim": "groups", "user.attribute": "upstream_groups"}),
        ("dev role", "oidc-role-idp-mapper", {"claim": "groups", "claim.value": "dev", "role": "developer"}),
        ("eng group", "oidc-advanced-group-idp-mapper", {
            "claims": json.dumps([{"key": "groups", "value": "st.*"}, {"key": "email_verified", "value": "true"}]),
            "are.claim.values.regex": "true", "group": "/engineering"}),
    ):
        idp.mappers.create(realm=realm, name=name, mapper_type=mapper_type, config=config)
    tokens(base, sign_in(new_browser(), base, upstream, login="margaret"))
    user = User.objects.get(realm=realm, username="margaret")
    assert user.attributes["upstream_groups"] == ["staff", "dev"]
    assert role in user.roles.all() and group in user.groups.all()


def test_google_preset_end_to_end(upstream, make_idp, base, realm, app, settings):
    """The google preset, moved to oidc-provider: its button, its ID token checked, the user created."""
    d = upstream.discovery
    settings.IDP_BROKER_PRESET_URLS = {"google": {
        "https://accounts.google.com/o/oauth2/v2/auth": d["authorization_endpoint"],
        "https://oauth2.googleapis.com/token": d["token_endpoint"],
        "https://openidconnect.googleapis.com/v1/userinfo": d["userinfo_endpoint"],
        "https://www.googleapis.com/oauth2/v3/certs": d["jwks_uri"], "https://accounts.google.com": upstream.issuer}}
    client = upstream.register(f"{base}/realms/acme/broker/google/endpoint", token_endpoint_auth_method="client_secret_post")
    make_idp({"clientId": client["client_id"], "clientSecret": client["client_secret"]}, provider_id="google",
             alias="google", fields={"trust_email": True, "display_name": "Google"})
    browser = new_browser()
    page = browser.get(auth_url(base), timeout=10)
    link = html.unescape(re.search(r'id="social-google" class="social" href="([^"]+)"', page.text).group(1))
    sent = browser.get(base + link, timeout=10, allow_redirects=False)
    assert sent.headers["Location"].startswith(d["authorization_endpoint"])
    back = browser.get(upstream.sign_in(sent.headers["Location"], "sergey"), timeout=10, allow_redirects=False)
    assert tokens(base, back)["access_token"]
    user = User.objects.get(realm=realm, username="sergey")
    assert user.email == "sergey@upstream.example" and user.email_verified
    assert FederatedIdentity.objects.get(user=user).identity_provider.alias == "google"
