"""Logout: RP-initiated (id_token_hint, post_logout_redirect_uri, state, confirmation), the SSO
session ended, front-channel iframes, and back-channel logout tokens received by a real HTTP
server on loopback and verified against the realm's JWKS."""
import json
import re
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
import time_machine
from django.utils import timezone
from jwcrypto import jwk, jws

from oidc.backchannel import EVENT
from realms.models import Event, UserSession
from realms.sso import sessions
from tests import servers
from tests.oidc.browser.conftest import PASSWORD, make_client
from tests.oidc.browser.test_browser_authorize import AUTH, _action, _params, _query, _sign_in

LOGOUT = "/realms/acme/protocol/openid-connect/logout"
TOKEN = "/realms/acme/protocol/openid-connect/token"
ISSUER = "http://testserver/realms/acme"


class Receiver(servers.Receiver):
    """A relying party's back end on 127.0.0.1 that records logout tokens."""

    @property
    def tokens(self):
        return [(r["path"], r["headers"]["Content-Type"], parse_qs(r["body"].decode())["logout_token"][0])
                for r in self.requests]

    def got(self, timeout):
        return bool(self.wait_for(1, timeout))


@pytest.fixture
def receiver():
    server = Receiver()
    yield server
    server.close()


def _tokens(client, code):
    response = client.post(TOKEN, {"grant_type": "authorization_code", "code": code, "client_id": "web-app",
                                    "client_secret": "secret-of-web-app", "redirect_uri": "https://app.example/cb"})
    assert response.status_code == 200, response.content
    return response.json()


def _signed_in(client):
    _, query = _query(_sign_in(client, _params()))
    return _tokens(client, query["code"])


def _verify(token, client):
    keys = jwk.JWKSet.from_json(client.get("/realms/acme/protocol/openid-connect/certs").content)
    jws_token = jws.JWS()
    jws_token.deserialize(token)
    header = jws_token.jose_header
    jws_token.verify(keys.get_key(header["kid"]), alg=header["alg"])
    return header, json.loads(jws_token.payload)


def test_logout_with_hint_redirects_with_state_and_tells_the_back_end(
        client, realm, client_app, user_with_password, receiver, outbound_loopback, django_capture_on_commit_callbacks):
    client_app.attributes = {**client_app.attributes, "backchannel.logout.url": receiver.url("/bc-logout")}
    client_app.save()
    realm.events_enabled = True
    realm.save()
    id_token = _signed_in(client)["id_token"]
    user_session = UserSession.objects.get()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.get(LOGOUT, {"id_token_hint": id_token, "state": "bye-1",
                                       "post_logout_redirect_uri": "https://app.example/cb"})
    assert response.status_code == 302 and response["Location"] == "https://app.example/cb?state=bye-1"
    assert response.cookies["SERVICE_IDENTITY"].value == ""  # cleared
    assert not UserSession.objects.exists()
    assert Event.objects.filter(type="LOGOUT", session_id=user_session.pk, user_id=user_with_password.pk).exists()

    assert receiver.got(5)
    path, content_type, token = receiver.tokens[0]
    assert path == "/bc-logout" and content_type == "application/x-www-form-urlencoded"
    header, claims = _verify(token, client)
    assert header["typ"] == "logout+jwt"
    assert claims["iss"] == ISSUER and claims["aud"] == "web-app"
    assert claims["sid"] == user_session.pk and claims["sub"] == user_with_password.pk
    assert claims["events"] == {EVENT: {}} and claims["jti"] and claims["iat"]
    assert "nonce" not in claims
    # The session is gone: the browser is asked to sign in again.
    assert client.get(AUTH, _params()).status_code == 200


def test_every_client_of_the_session_gets_its_own_logout_token(
        client, realm, client_app, user_with_password, receiver, outbound_loopback, django_capture_on_commit_callbacks):
    client_app.attributes = {**client_app.attributes, "backchannel.logout.url": receiver.url("/web")}
    client_app.save()
    make_client(realm, "second", redirect_uris=["https://second.example/cb"],
                attributes={"backchannel.logout.url": receiver.url("/second")})
    make_client(realm, "quiet", redirect_uris=["https://quiet.example/cb"])
    id_token = _signed_in(client)["id_token"]
    for client_id in ("second", "quiet"):
        _query(client.get(AUTH, _params(client_id, f"https://{client_id}.example/cb")))
    with django_capture_on_commit_callbacks(execute=True):
        client.get(LOGOUT, {"id_token_hint": id_token})
    by_path = {path: _verify(token, client)[1]["aud"] for path, _, token in receiver.tokens}
    assert by_path == {"/web": "web-app", "/second": "second"}


def test_expired_id_token_hint_is_accepted(client, realm, client_app, user_with_password):
    id_token = _signed_in(client)["id_token"]
    with time_machine.travel(timezone.now() + timedelta(seconds=realm.access_token_lifespan + 60), tick=False):
        sessions.touch(UserSession.objects.get())  # the SSO session itself is still alive
        response = client.get(LOGOUT, {"id_token_hint": id_token, "post_logout_redirect_uri": "https://app.example/cb"})
    assert response.status_code == 302 and not UserSession.objects.exists()


def test_tampered_id_token_hint_is_refused(client, realm, client_app, user_with_password):
    id_token = _signed_in(client)["id_token"]
    head, body, sig = id_token.split(".")
    response = client.get(LOGOUT, {"id_token_hint": f"{head}.{body}.{sig[:-4]}AAAA",
                                   "post_logout_redirect_uri": "https://app.example/cb"})
    assert response.status_code == 400 and "Invalid id_token_hint." in response.content.decode()
    assert UserSession.objects.exists()


def test_access_token_is_not_an_id_token_hint(client, realm, client_app, user_with_password):
    access_token = _signed_in(client)["access_token"]
    response = client.get(LOGOUT, {"id_token_hint": access_token})
    assert response.status_code == 400 and UserSession.objects.exists()


@pytest.mark.parametrize("params, message", [
    ({"post_logout_redirect_uri": "https://evil.example/"}, "Invalid parameter: post_logout_redirect_uri"),
    ({"post_logout_redirect_uri": "https://app.example/cb/"}, "Invalid parameter: post_logout_redirect_uri"),
    ({"client_id": "spa"}, "does not match"),
])
def test_bad_logout_requests_are_a_page(client, realm, client_app, public_app, user_with_password, params, message):
    id_token = _signed_in(client)["id_token"]
    response = client.get(LOGOUT, {"id_token_hint": id_token, **params})
    assert response.status_code == 400 and message in response.content.decode()
    assert not response.has_header("Location") and UserSession.objects.exists()


@pytest.mark.parametrize("tail", ["%2e%2e/admin", ".%2E/admin", "..%2fadmin", "%252e%252e/admin"])
def test_wildcard_post_logout_uri_cannot_be_left(client, realm, client_app, tail):
    # The same matcher as redirect URIs (realms.http.redirects): a wildcard's tail cannot climb out.
    client_app.attributes = {"post.logout.redirect.uris": "https://app.example/bye/*"}
    client_app.save()
    params = {"client_id": "web-app", "post_logout_redirect_uri": f"https://app.example/bye/{tail}"}
    response = client.get(LOGOUT, params)
    assert response.status_code == 400 and "Invalid parameter: post_logout_redirect_uri" in response.content.decode()
    params["post_logout_redirect_uri"] = "https://app.example/bye/now"
    assert client.get(LOGOUT, params)["Location"] == "https://app.example/bye/now"  # the wildcard still works


def test_redirect_without_a_client_is_refused(client, client_app):
    response = client.get(LOGOUT, {"post_logout_redirect_uri": "https://app.example/cb"})
    assert response.status_code == 400


def test_without_hint_the_user_confirms_first(client, realm, client_app, user_with_password):
    _signed_in(client)
    page = client.get(LOGOUT, {"client_id": "web-app", "post_logout_redirect_uri": "https://app.example/cb",
                               "state": "s"})
    body = page.content.decode()
    assert page.status_code == 200 and "Do you want to sign out?" in body and UserSession.objects.exists()
    forged = client.post(LOGOUT, {"client_id": "web-app", "session_code": "forged", "confirm": "yes"})
    assert forged.status_code == 200 and UserSession.objects.exists()
    fields = dict(re.findall(r'name="([^"]+)" value="([^"]*)"', body))
    done = client.post(_action(page), {**fields, "confirm": "yes"})
    assert done.status_code == 302 and done["Location"] == "https://app.example/cb?state=s"
    assert not UserSession.objects.exists()


def test_logout_without_session_still_redirects(client, client_app):
    response = client.get(LOGOUT, {"client_id": "web-app", "post_logout_redirect_uri": "https://app.example/cb",
                                   "state": "x"})
    assert response.status_code == 302 and response["Location"] == "https://app.example/cb?state=x"


def test_front_channel_logout_page_loads_each_client_url(client, realm, client_app, user_with_password):
    client_app.attributes = {**client_app.attributes, "frontchannel.logout.url": "https://app.example/fc?x=1"}
    client_app.save()
    id_token = _signed_in(client)["id_token"]
    user_session = UserSession.objects.get()
    response = client.get(LOGOUT, {"id_token_hint": id_token, "post_logout_redirect_uri": "https://app.example/cb",
                                   "state": "s"})
    body = response.content.decode()
    assert response.status_code == 200
    src = re.search(r'<iframe src="([^"]+)"', body).group(1).replace("&amp;", "&")
    parts = urlsplit(src)
    query = {k: v[0] for k, v in parse_qs(parts.query).items()}
    assert parts.path == "/fc" and query == {"x": "1", "iss": ISSUER, "sid": user_session.pk}
    assert 'href="https://app.example/cb?state=s"' in body
    assert not UserSession.objects.exists()


def test_back_channel_refuses_loopback_in_production(
        client, realm, client_app, user_with_password, receiver, settings, django_capture_on_commit_callbacks):
    settings.IDP_OUTBOUND_ALLOWED_NETWORKS = []  # production: loopback is not public
    client_app.attributes = {**client_app.attributes, "backchannel.logout.url": receiver.url("/bc")}
    client_app.save()
    id_token = _signed_in(client)["id_token"]
    with django_capture_on_commit_callbacks(execute=True):
        response = client.get(LOGOUT, {"id_token_hint": id_token})
    assert response.status_code == 200 and not UserSession.objects.exists()
    assert not receiver.got(0.5) and receiver.tokens == []


def test_expiry_is_not_propagated(realm, client_app, user, receiver, outbound_loopback, django_capture_on_commit_callbacks):
    client_app.attributes = {"backchannel.logout.url": receiver.url("/bc")}
    client_app.save()
    user_session = sessions.create_user_session(realm, user)
    sessions.get_or_create_client_session(user_session, client_app)
    with django_capture_on_commit_callbacks(execute=True):
        with time_machine.travel(timezone.now() + timedelta(seconds=realm.sso_session_idle_timeout + 5), tick=False):
            assert sessions.get_valid_session(realm, user_session.pk) is None
    assert not receiver.got(0.3)


def test_session_ended_elsewhere_is_propagated(realm, client_app, user, receiver, outbound_loopback,
                                               django_capture_on_commit_callbacks, settings):
    """Any end of a session (token reuse detection, admin) tells the clients, not only logout."""
    settings.IDP_BASE_URL = "https://id.example"
    client_app.attributes = {"backchannel.logout.url": receiver.url("/bc")}
    client_app.save()
    user_session = sessions.create_user_session(realm, user)
    sessions.get_or_create_client_session(user_session, client_app)
    with django_capture_on_commit_callbacks(execute=True):
        sessions.end_session(user_session, reason="revoked")
    assert receiver.got(5)
    token = receiver.tokens[0][2]
    from django.test import Client as HttpClient

    assert _verify(token, HttpClient())[1]["iss"] == "https://id.example/realms/acme"


def test_password_is_not_needed_again_after_logout_of_other_browser(client, realm, client_app, user_with_password):
    """Logging out one browser leaves another browser's session alone."""
    from django.test import Client as HttpClient

    other = HttpClient()
    _signed_in(client)
    _query(_sign_in(other, _params(), "bob", PASSWORD))
    assert UserSession.objects.count() == 2
    page = client.get(LOGOUT)
    fields = dict(re.findall(r'name="([^"]+)" value="([^"]*)"', page.content.decode()))
    client.post(LOGOUT, {**fields, "confirm": "yes"})
    assert UserSession.objects.count() == 1
    _, query = _query(other.get(AUTH, _params()))
    assert query["code"]
