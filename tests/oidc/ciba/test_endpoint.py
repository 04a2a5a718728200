"""The backchannel authentication endpoint's refusals, in Keycloak's order and words, and the
realm's CIBA policy (realm attributes) and the client's switches taking effect."""
import pytest

from oidc.models import BackchannelAuthentication
from realms.models import Event
from tests.oidc.ciba.conftest import SECRET, set_client_attributes, set_realm_attributes, start
from tests.oidc.endpoints.conftest import basic

BINDING = ("the binding_message value has to be max 50 characters in length and must contain only basic "
           "plain-text characters without spaces")


def error(response):
    return response.status_code, response.json()["error"], response.json().get("error_description")


def test_client_authentication_is_required(http, realm, channel):
    assert error(start(http, realm, secret="wrong"))[:2] == (401, "invalid_client")
    response = http.post(f"/realms/{realm.name}/protocol/openid-connect/ext/ciba/auth",
                         {"scope": "openid", "login_hint": "alice"})
    assert response.status_code == 401 and response.json()["error"] == "invalid_client"
    assert channel.requests == []


def test_public_clients_are_refused(http, realm, channel):
    response = http.post(f"/realms/{realm.name}/protocol/openid-connect/ext/ciba/auth",
                         {"client_id": "spa", "scope": "openid", "login_hint": "alice"})
    assert error(response) == (401, "unauthorized_client", "Public client not allowed to use CIBA")


def test_client_without_the_ciba_switch(http, realm, channel):
    assert error(start(http, realm, client_id="plain-app")) == (401, "invalid_grant", "Client not allowed OIDC CIBA Grant")
    set_client_attributes(realm, "ciba-app", **{"oidc.ciba.grant.enabled": "false"})
    assert error(start(http, realm)) == (401, "invalid_grant", "Client not allowed OIDC CIBA Grant")
    set_client_attributes(realm, "plain-app", **{"oidc.ciba.grant.enabled": "TRUE"})
    assert start(http, realm, client_id="plain-app").status_code == 200
    assert Event.objects.filter(realm=realm, type="LOGIN_ERROR", error="not_allowed").count() == 2


def test_user_hint_rules(http, realm, channel):
    # login_hint checked before scope.
    assert error(start(http, realm, login_hint=None, scope=None)) == (
        400, "invalid_request", "missing parameter : login_hint")
    assert error(start(http, realm, login_hint="nobody")) == (400, "invalid_request", "invalid user")
    assert error(start(http, realm, login_hint="")) == (400, "invalid_request", "invalid user")
    assert error(start(http, realm, login_hint="bob")) == (400, "invalid_request", "invalid user")  # disabled
    assert start(http, realm, login_hint="alice@example.org").status_code == 200  # name or e-mail
    assert channel.last["json"]["login_hint"] == "alice"  # the channel is told the username
    # id_token_hint and login_hint_token: not read while the realm asks for login_hint ...
    assert error(start(http, realm, login_hint=None, id_token_hint="x.y.z")) == (
        400, "invalid_request", "missing parameter : login_hint")
    assert error(start(http, realm, login_hint=None, login_hint_token="x.y.z")) == (
        400, "invalid_request", "missing parameter : login_hint")


@pytest.mark.parametrize("hint", ["id_token_hint", "login_hint_token"])
def test_realm_asking_for_a_hint_keycloak_cannot_resolve(http, realm, channel, hint):
    set_realm_attributes(realm, cibaAuthRequestedUserHint=hint)
    assert error(start(http, realm)) == (400, "invalid_request", f"missing parameter : {hint}")
    assert error(start(http, realm, **{hint: "eyJhbGciOiJub25lIn0.e30."})) == (400, "invalid_request", "invalid user")
    set_realm_attributes(realm, cibaAuthRequestedUserHint="phone_number")
    assert error(start(http, realm)) == (400, "invalid_request", "invalid user hint")


def test_scope_rules(http, realm, channel):
    assert error(start(http, realm, scope=None)) == (400, "invalid_request", "missing parameter : scope")
    assert error(start(http, realm, scope="openid no-such-scope")) == (
        400, "invalid_scope", "Invalid scopes: openid no-such-scope")
    assert error(start(http, realm, scope="profile")) == (400, "invalid_scope", "Missing openid scope")
    assert error(start(http, realm, scope="")) == (400, "invalid_scope", "Missing openid scope")
    assert start(http, realm, scope="openid profile").status_code == 200


@pytest.mark.parametrize("message", ["has space", "x" * 51, "", "品川", "a<b>"])
def test_bad_binding_message(http, realm, channel, message):
    assert error(start(http, realm, binding_message=message)) == (400, "invalid_binding_message", BINDING)
    assert channel.requests == []


def test_good_binding_message(http, realm, channel):
    assert start(http, realm, binding_message="Lorem_ipsum-1.2+3/4!?#" + "x" * 28).status_code == 200


def test_requested_expiry(http, realm, channel):
    assert start(http, realm, requested_expiry="30").json()["expires_in"] == 30
    # Never past the realm's cibaExpiresIn.
    assert start(http, realm, requested_expiry="100000").json()["expires_in"] == 120
    for bad in ("soon", "0", "-5"):
        assert error(start(http, realm, requested_expiry=bad)) == (400, "invalid_request", "Invalid requested_expiry")


def test_notification_token_only_in_ping_mode(http, realm, channel):
    assert error(start(http, realm, client_notification_token="t" * 20)) == (
        400, "invalid_request", "Client Notification token supported only for the ping mode")


def test_refusals_keycloak_makes(http, realm, channel):
    assert error(start(http, realm, user_code="1234")) == (400, "invalid_request", "User code not supported")
    assert error(start(http, realm, request_uri="https://app.example/req")) == (
        400, "invalid_request", "Specified 'request_uri' not allowed for this client.")
    assert error(start(http, realm, acr_values="a" * 600)) == (400, "invalid_request", "Invalid acr_values")
    response = http.post(f"/realms/{realm.name}/protocol/openid-connect/ext/ciba/auth",
                         "scope=openid&login_hint=alice&login_hint=mallory",
                         content_type="application/x-www-form-urlencoded",
                         HTTP_AUTHORIZATION=basic("ciba-app", SECRET))
    assert error(response) == (400, "invalid_request", "duplicated parameter")
    assert channel.requests == [] and not BackchannelAuthentication.objects.exists()


def test_realm_policy_takes_effect(http, realm, channel):
    set_realm_attributes(realm, cibaExpiresIn="45", cibaInterval="7")
    body = start(http, realm).json()
    assert (body["expires_in"], body["interval"]) == (45, 7)
    row = BackchannelAuthentication.objects.get()
    assert row.interval == 7 and 44 <= (row.expires_at - row.created).total_seconds() <= 45
    # A value that is no number falls back to Keycloak's defaults.
    set_realm_attributes(realm, cibaExpiresIn="", cibaInterval="often")
    body = start(http, realm).json()
    assert (body["expires_in"], body["interval"]) == (120, 5)


def test_realm_ping_mode_requires_a_notification_token(http, realm, channel):
    set_realm_attributes(realm, cibaBackchannelTokenDeliveryMode="ping")
    assert error(start(http, realm)) == (
        400, "invalid_request", "Client Notification token needs to be provided with the ping mode")
    # ciba-app has no notification endpoint: refused before anything is sent.
    assert error(start(http, realm, client_notification_token="n" * 20)) == (
        400, "invalid_request", "Client notification endpoint not set for the client with the ping mode")
    # The client's own mode wins over the realm's.
    set_client_attributes(realm, "ciba-app", **{"ciba.backchannel.token.delivery.mode": "poll"})
    assert start(http, realm).status_code == 200


def test_long_notification_token(http, realm, channel):
    response = start(http, realm, client_id="ciba-ping", client_notification_token="n" * 1025)
    assert error(response) == (400, "invalid_request", "Client Notification token length is limited to 1024 characters")


def test_channel_failures_answer_503_and_leave_nothing(http, realm, channel, settings):
    channel.status = 500
    assert error(start(http, realm)) == (503, "server_error", "Unexpected response from authentication device")
    channel.status = 202
    assert error(start(http, realm)) == (503, "server_error", "Unexpected response from authentication device")
    channel.status = 200  # Keycloak 26 takes a 200 as well as a 201
    assert start(http, realm).status_code == 200
    BackchannelAuthentication.objects.all().delete()
    settings.IDP_CIBA_HTTP_AUTH_CHANNEL_URI = "http://127.0.0.1:9/unreachable"
    assert error(start(http, realm)) == (503, "server_error", "Failed to send authentication request")
    settings.IDP_CIBA_HTTP_AUTH_CHANNEL_URI = ""
    assert error(start(http, realm)) == (503, "server_error", "Failed to send authentication request")
    assert not BackchannelAuthentication.objects.exists()


def test_channel_calls_follow_the_outbound_rules(http, realm, channel, settings):
    # Production rules without the loopback exception: the channel URL is refused, not called.
    settings.IDP_OUTBOUND_ALLOWED_NETWORKS = []
    assert error(start(http, realm)) == (503, "server_error", "Failed to send authentication request")
    assert channel.requests == []
