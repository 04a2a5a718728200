"""End to end over HTTP (our live server, pysaml2's identity provider on its own loopback port, a
browser without JavaScript that carries the forms): the login page's button, the signed
AuthnRequest, the provider's signed Response at our broker endpoint, first broker login creating
the user, our client's tokens; a second sign-in through the link; the cross-site POST that lacks
our cookie; single logout started by us (through the browser and server to server) and by the
provider."""
import html
import re
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from realms.models import FederatedIdentity, User, UserSession
from realms.users.accounts import create_user
from saml import constants as c
from saml.broker.logout import NOTE_SESSION_INDEX, NOTE_SUBJECT

from ...oidc.browser.conftest import make_client
from ..sp import form_fields, new_browser
from .conftest import ALIAS

REDIRECT = "https://app.example/cb"
MAPPERS = (("mail", "email"), ("givenName", "firstName"), ("sn", "lastName"))


@pytest.fixture
def app(realm):
    return make_client(realm, "web-app", redirect_uris=[REDIRECT], attributes={"post.logout.redirect.uris": "+"})


@pytest.fixture
def live_idp(make_idp, upstream, base, realm, app):
    """``live_idp(**config)``: the provider, with the upstream trusting our descriptor as served."""

    def make(**config):
        idp = make_idp(**config)
        for friendly, target in MAPPERS:
            idp.mappers.create(realm=realm, name=target, mapper_type="saml-user-attribute-idp-mapper",
                               config={"attribute.friendly.name": friendly, "user.attribute": target})
        user = upstream.user
        metadata = requests.get(f"{base}/realms/acme/broker/{ALIAS}/endpoint/descriptor", timeout=10)
        assert metadata.status_code == 200
        upstream.trust(metadata.text, **config.pop("upstream_options", {}))
        upstream.user = user
        return idp

    return make


def linked(realm, idp):
    """A user already linked to the upstream's u-1001 (first broker login is another test's)."""
    user = create_user(realm, "ada")
    FederatedIdentity.objects.create(realm=realm, user=user, identity_provider=idp, subject="u-1001",
                                     user_name="u-1001")
    return user


def auth_url(base):
    return (f"{base}/realms/acme/protocol/openid-connect/auth?client_id=web-app&response_type=code&scope=openid"
            f"&state=st&redirect_uri={REDIRECT}")


def through_upstream(browser, page):
    """Post our AuthnRequest form to the upstream; (our endpoint, the fields it posts back)."""
    action, fields = form_fields(page.text)
    answer = browser.post(action, data=fields, timeout=10)
    assert answer.status_code == 200, answer.text[:300]
    return form_fields(answer.text)


def sign_in(browser, base, *, via_button=True):
    """Our login page -> upstream -> our endpoint; the final redirect to the client."""
    if via_button:
        page = browser.get(auth_url(base), timeout=10)
        link = html.unescape(re.search(r'id="social-upstream" class="social" href="([^"]+)"', page.text).group(1))
        sent = browser.get(base + link, timeout=10)
    else:
        sent = browser.get(auth_url(base) + f"&kc_idp_hint={ALIAS}", timeout=10)
    endpoint, fields = through_upstream(browser, sent)
    back = browser.post(endpoint, data=fields, timeout=10, allow_redirects=False)
    assert back.status_code == 302, back.text[:500]
    return back


def tokens(base, back):
    location = back.headers["Location"]
    assert location.startswith(REDIRECT + "?"), location
    code = parse_qs(urlsplit(location).query)["code"][0]
    answer = requests.post(f"{base}/realms/acme/protocol/openid-connect/token", data={
        "grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT, "client_id": "web-app",
        "client_secret": "secret-of-web-app"}, timeout=10)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_a_linked_user_signs_in_through_the_button_and_the_hint(live_idp, base, realm, upstream):
    idp = live_idp()
    user = linked(realm, idp)
    browser = new_browser()
    issued = tokens(base, sign_in(browser, base))
    assert issued["access_token"] and issued["id_token"]
    user.refresh_from_db()  # the mappers ran (LEGACY: every sign-in)
    assert (user.email, user.first_name, user.last_name) == ("ada@example.org", "Ada", "Lovelace")
    session = UserSession.objects.get(user=user)
    assert session.notes["identity_provider"] == ALIAS and session.notes[NOTE_SUBJECT] == "u-1001"
    assert session.notes[NOTE_SESSION_INDEX] == upstream.sessions["u-1001"]
    [(kind, parsed)] = upstream.requests
    assert kind == "AuthnRequest" and parsed.message.signature is not None
    # Another browser, straight from kc_idp_hint.
    again = tokens(base, sign_in(new_browser(), base, via_button=False))
    assert again["access_token"] and User.objects.filter(realm=realm).count() == 1


def test_a_cross_site_post_without_our_cookie_is_posted_again_from_our_page(live_idp, base, realm):
    linked(realm, live_idp())
    browser = new_browser()
    page = browser.get(auth_url(base) + f"&kc_idp_hint={ALIAS}", timeout=10)
    endpoint, fields = through_upstream(browser, page)
    # What a browser sends for the provider's cross-site POST: no SameSite=Lax cookie.
    cross_site = requests.post(endpoint, data=fields, headers={"Sec-Fetch-Site": "cross-site"}, timeout=10,
                               allow_redirects=False)
    assert cross_site.status_code == 200
    action, again = form_fields(cross_site.text)
    assert urlsplit(action).path == urlsplit(endpoint).path and again == fields
    # The page's own POST is same-origin: the cookie goes along and the sign-in completes.
    back = browser.post(base + action if action.startswith("/") else action, data=again,
                        headers={"Sec-Fetch-Site": "same-origin"}, timeout=10, allow_redirects=False)
    assert back.status_code == 302 and back.headers["Location"].startswith(REDIRECT)


def test_an_answer_that_fails_a_check_is_shown_on_our_login_page(live_idp, base, upstream):
    live_idp()
    upstream.options.update(sign_response=False, sign_assertion=False)
    browser = new_browser()
    endpoint, fields = through_upstream(browser, browser.get(auth_url(base) + f"&kc_idp_hint={ALIAS}", timeout=10))
    page = browser.post(endpoint, data=fields, timeout=10)
    assert page.status_code == 200 and 'id="kc-broker-error"' in page.text
    assert "Invalid requester" in page.text and 'name="password"' in page.text


def logout_url(base, id_token):
    return (f"{base}/realms/acme/protocol/openid-connect/logout?id_token_hint={id_token}"
            f"&post_logout_redirect_uri={REDIRECT}&state=bye")


@pytest.mark.parametrize("post_binding", ["true", "false"])
def test_our_logout_goes_through_the_provider(live_idp, base, realm, upstream, post_binding):
    linked(realm, live_idp(postBindingLogout=post_binding))
    browser = new_browser()
    issued = tokens(base, sign_in(browser, base))
    upstream.requests.clear()
    page = browser.get(logout_url(base, issued["id_token"]), timeout=10, allow_redirects=False)
    assert not UserSession.objects.filter(realm=realm).exists()
    assert page.status_code == 302
    if post_binding == "true":  # our signed LogoutRequest, posted by the browser to the SLO service ...
        action, fields = form_fields(browser.get(page.headers["Location"], timeout=10).text)
        assert action == upstream.slo and "SAMLRequest" in fields
        answered = browser.post(action, data=fields, timeout=10)
    else:  # ... or sent there by the Redirect binding, signed on the query string
        location = page.headers["Location"]
        assert location.startswith(upstream.slo + "?SAMLRequest=") and "&Signature=" in location
        answered = browser.get(location, timeout=10)
    [(kind, parsed)] = upstream.requests
    assert kind == "LogoutRequest" and parsed.message.name_id.text == "u-1001"
    assert [s.text for s in parsed.message.session_index] == [upstream.sessions["u-1001"]]
    # ... whose LogoutResponse comes back to our endpoint and on to the client.
    endpoint, back_fields = form_fields(answered.text)
    assert endpoint.endswith(f"/broker/{ALIAS}/endpoint")
    done = browser.post(endpoint, data=back_fields, timeout=10, allow_redirects=False)
    assert done.status_code == 302
    finished = browser.get(done.headers["Location"], timeout=10, allow_redirects=False)
    assert finished.status_code == 302 and finished.headers["Location"] == f"{REDIRECT}?state=bye"


def test_back_channel_logout_when_the_provider_supports_it(live_idp, base, realm, upstream, outbound_loopback):
    linked(realm, live_idp(backchannelSupported="true"))
    browser = new_browser()
    issued = tokens(base, sign_in(browser, base))
    upstream.requests.clear()
    page = browser.get(logout_url(base, issued["id_token"]), timeout=10, allow_redirects=False)
    assert page.status_code == 302 and page.headers["Location"] == f"{REDIRECT}?state=bye"  # the browser stays
    [(kind, parsed)] = upstream.requests
    assert kind == "LogoutRequest" and parsed.message.name_id.text == "u-1001"


def test_logout_started_by_the_provider(live_idp, base, realm, upstream):
    linked(realm, live_idp())
    browser = new_browser()
    tokens(base, sign_in(browser, base))
    endpoint = f"{base}/realms/acme/broker/{ALIAS}/endpoint"
    request_id, encoded = upstream.logout_request(endpoint, f"{base}/realms/acme", "u-1001",
                                                  upstream.sessions["u-1001"])
    answer = browser.post(endpoint, data={"SAMLRequest": encoded, "RelayState": "rs-1"}, timeout=10)
    assert not UserSession.objects.filter(realm=realm).exists()
    action, fields = form_fields(answer.text)
    assert action == upstream.slo and fields["RelayState"] == "rs-1"
    confirmed = browser.post(action, data=fields, timeout=10)  # pysaml2 checks our signed LogoutResponse
    assert confirmed.text == "logged out upstream"
    kind, parsed = upstream.requests[-1]
    assert kind == "LogoutResponse" and parsed.in_response_to == request_id
    assert parsed.response.status.status_code.value == c.STATUS_SUCCESS


def test_logout_started_by_the_provider_by_the_redirect_binding(live_idp, base, realm, upstream):
    linked(realm, live_idp())
    browser = new_browser()
    tokens(base, sign_in(browser, base))
    endpoint = f"{base}/realms/acme/broker/{ALIAS}/endpoint"
    _, url = upstream.logout_request(endpoint, f"{base}/realms/acme", "u-1001", redirect=True)
    tampered = url.replace("RelayState=rs-2", "RelayState=rs-3")
    assert browser.get(tampered, timeout=10).status_code == 400  # the query's signature covers RelayState
    assert UserSession.objects.filter(realm=realm).count() == 1
    answer = browser.get(url, timeout=10)
    assert answer.status_code == 200 and not UserSession.objects.filter(realm=realm).exists()
    action, fields = form_fields(answer.text)
    assert action == upstream.slo and fields["RelayState"] == "rs-2"


def test_a_forged_logout_request_ends_nothing(live_idp, base, realm, upstream):
    linked(realm, live_idp())
    tokens(base, sign_in(new_browser(), base))
    endpoint = f"{base}/realms/acme/broker/{ALIAS}/endpoint"
    _, encoded = upstream.logout_request(endpoint, f"{base}/realms/acme", "u-1001")
    import base64

    forged = base64.b64encode(base64.b64decode(encoded).replace(b"u-1001", b"u-1002")).decode()
    answer = requests.post(endpoint, data={"SAMLRequest": forged}, timeout=10)
    assert answer.status_code == 400 and UserSession.objects.filter(realm=realm).count() == 1


def test_first_sign_in_creates_the_user_with_the_mappers_and_links_it(live_idp, base, realm, upstream):
    live_idp(fields={"trust_email": True})
    issued = tokens(base, sign_in(new_browser(), base))
    user = User.objects.get(realm=realm, username="u-1001")
    assert (user.email, user.email_verified, user.first_name, user.last_name) == (
        "ada@example.org", True, "Ada", "Lovelace")
    link = FederatedIdentity.objects.get(user=user)
    assert (link.identity_provider.alias, link.subject, link.user_name) == (ALIAS, "u-1001", "u-1001")
    assert issued["access_token"]
    # The next sign-in goes through the link: no second user.
    tokens(base, sign_in(new_browser(), base, via_button=False))
    assert User.objects.filter(realm=realm).count() == 1
