"""The authentication channel's callback (its bearer token, its answers) and ping mode: the
client's notification endpoint (a loopback server) told on approval and on denial, then the
tokens fetched with the same grant."""
import json

from oidc.models import BackchannelAuthentication
from tests.oidc.ciba.conftest import answer, callback_url, poll, set_client_attributes, start


def error(response):
    return response.status_code, response.json()["error"], response.json().get("error_description")


def test_callback_needs_the_channel_token(http, realm, channel):
    auth_req_id = start(http, realm).json()["auth_req_id"]
    assert error(answer(http, realm, "")) == (401, "invalid_token", "Invalid token")
    assert error(answer(http, realm, "not-a-jwt")) == (403, "invalid_token", "Invalid token")
    # The client cannot approve its own request with its auth_req_id.
    assert error(answer(http, realm, auth_req_id)) == (403, "invalid_token", "Invalid token")
    assert error(poll(http, realm, auth_req_id))[1] == "authorization_pending"


def test_an_access_token_of_the_realm_is_no_channel_token(http, realm, channel):
    auth_req_id = start(http, realm).json()["auth_req_id"]
    answer(http, realm, channel.bearer())
    access_token = poll(http, realm, auth_req_id).json()["access_token"]
    start(http, realm)
    assert error(answer(http, realm, access_token)) == (403, "invalid_token", "Invalid token")


def test_a_forged_channel_token_is_refused(http, realm, channel):
    from oidc import jose

    start(http, realm)
    header, claims, _, _ = jose.parse(channel.bearer())
    forged = jose.sign(claims, alg="HS256", key=b"k" * 32, kid=header.get("kid", ""))
    assert error(answer(http, realm, forged)) == (403, "invalid_token", "Invalid token")


def test_status_must_be_one_of_keycloaks(http, realm, channel):
    auth_req_id = start(http, realm).json()["auth_req_id"]
    for status in ("APPROVED", None):
        assert error(answer(http, realm, channel.bearer(), status)) == (
            400, "invalid_request", "Invalid authentication status")
    response = http.post(callback_url(realm), "not json", content_type="application/json",
                         HTTP_AUTHORIZATION="Bearer " + channel.bearer())
    assert error(response) == (400, "invalid_request", "Invalid authentication status")
    assert error(poll(http, realm, auth_req_id))[1] == "authorization_pending"


def test_a_second_callback_cancels_the_request(http, realm, channel):
    auth_req_id = start(http, realm).json()["auth_req_id"]
    assert answer(http, realm, channel.bearer()).status_code == 200
    # Replayed (or a late contradicting answer): refused, and the request is gone.
    assert error(answer(http, realm, channel.bearer(), "UNAUTHORIZED")) == (403, "invalid_token", "Invalid token")
    assert error(poll(http, realm, auth_req_id)) == (400, "invalid_grant", "Invalid Auth Req ID")


def test_callback_for_a_disabled_client(http, realm, channel):
    start(http, realm)
    from realms.models import Client

    Client.objects.filter(realm=realm, client_id="ciba-app").update(enabled=False)
    from realms.data import realm_cache

    realm_cache.clear()
    assert error(answer(http, realm, channel.bearer())) == (400, "invalid_request", "Invalid token recipient")


def test_a_user_disabled_after_approval_gets_no_tokens(http, realm, alice, channel):
    auth_req_id = start(http, realm).json()["auth_req_id"]
    answer(http, realm, channel.bearer())
    alice.enabled = False
    alice.save()
    assert error(poll(http, realm, auth_req_id)) == (400, "invalid_grant", "User disabled")


def test_offline_access_through_ciba(http, realm, channel):
    auth_req_id = start(http, realm, scope="openid offline_access").json()["auth_req_id"]
    answer(http, realm, channel.bearer())
    response = poll(http, realm, auth_req_id)
    assert response.status_code == 200, response.content
    assert "offline_access" in response.json()["scope"].split()


def _ping_realm(realm, notification_server):
    set_client_attributes(realm, "ciba-ping", **{
        "ciba.backchannel.client.notification.endpoint": notification_server.url + "cb/ciba"})


def test_ping_mode_approval(http, realm, channel, notification_server):
    _ping_realm(realm, notification_server)
    response = start(http, realm, client_id="ciba-ping")
    assert error(response) == (400, "invalid_request", "Client Notification token needs to be provided with the ping mode")
    body = start(http, realm, client_id="ciba-ping", client_notification_token="ping-token-8f2a").json()
    row = BackchannelAuthentication.objects.get()
    # The notification token and the auth_req_id are kept sealed, never in the clear.
    assert "ping-token-8f2a" not in row.notification_token and body["auth_req_id"] not in row.sealed_auth_req_id
    assert notification_server.requests == []
    assert answer(http, realm, channel.bearer()).status_code == 200
    note = notification_server.last
    assert note["path"] == "/cb/ciba"
    assert note["headers"]["Authorization"] == "Bearer ping-token-8f2a"
    assert note["headers"]["Content-Type"] == "application/json"
    assert note["json"] == {"auth_req_id": body["auth_req_id"]}
    tokens = poll(http, realm, body["auth_req_id"], client_id="ciba-ping")
    assert tokens.status_code == 200 and "access_token" in tokens.json()
    assert error(poll(http, realm, body["auth_req_id"], client_id="ciba-ping"))[1] == "invalid_grant"


def test_ping_mode_denial(http, realm, channel, notification_server):
    _ping_realm(realm, notification_server)
    body = start(http, realm, client_id="ciba-ping", client_notification_token="ping-token-2").json()
    assert answer(http, realm, channel.bearer(), "CANCELLED").status_code == 200
    assert notification_server.last["json"] == {"auth_req_id": body["auth_req_id"]}
    assert error(poll(http, realm, body["auth_req_id"], client_id="ciba-ping"))[1] == "access_denied"


def test_ping_notification_refused_by_the_client(http, realm, channel, notification_server):
    _ping_realm(realm, notification_server)
    notification_server.status = 500
    start(http, realm, client_id="ciba-ping", client_notification_token="ping-token-3")
    assert error(answer(http, realm, channel.bearer())) == (
        400, "invalid_request", "Failed to send request to client notification endpoint")
    assert json.dumps(notification_server.last["json"])  # it was called


def test_ping_notification_endpoint_removed_after_the_request(http, realm, channel, notification_server):
    _ping_realm(realm, notification_server)
    start(http, realm, client_id="ciba-ping", client_notification_token="ping-token-4")
    set_client_attributes(realm, "ciba-ping", **{"ciba.backchannel.client.notification.endpoint": ""})
    assert error(answer(http, realm, channel.bearer())) == (
        400, "invalid_request", "Client notification endpoint not set for the client with the ping mode")
