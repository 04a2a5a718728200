"""The device_code grant at the token endpoint (RFC 8628 §3.4-§3.5), Keycloak's order and texts:
the client switch, a missing, unknown, used or other client's code, authorization_pending,
slow_down, expired_token, access_denied, the tokens of an approved code (once), offline_access,
and a pending poll that costs no database query."""
import time
from datetime import timedelta

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from oidc import tokens
from oidc.models import DeviceAuthorization
from realms.models import Event, UserSession
from tests.oidc.device.conftest import (
    PENDING,
    SECRET,
    authorize,
    error,
    poll,
    set_client_attributes,
    set_realm,
    sign_in,
)


def issuer(realm):
    return f"http://testserver/realms/{realm.name}"


def test_from_request_to_tokens_then_the_code_is_gone(http, realm, client):
    started = authorize(http, realm, scope="openid email").json()
    assert error(poll(http, realm, started["device_code"])) == (400, "authorization_pending", PENDING)
    done = sign_in(client, realm, started["user_code"])
    assert done.status_code == 302 and done["Location"] == f"/realms/{realm.name}/device/status"
    row = DeviceAuthorization.objects.get()
    assert row.state == "approved" and row.user_session_id

    granted = poll(http, realm, started["device_code"])
    assert granted.status_code == 200, granted.content
    body = granted.json()
    assert {"access_token", "refresh_token", "id_token", "expires_in", "scope"} <= set(body)
    access = tokens.decode(realm, body["access_token"], issuer(realm))
    id_token = tokens.decode(realm, body["id_token"], issuer(realm))
    assert access["azp"] == id_token["aud"] == "tv" and access["sid"] == row.user_session_id
    assert id_token["email"] == "alice@example.org"
    assert "email" in body["scope"].split()
    assert not DeviceAuthorization.objects.exists()  # deleted once redeemed
    event = Event.objects.filter(type="OAUTH2_DEVICE_CODE_TO_TOKEN").get()
    assert event.client_id == "tv" and event.session_id == row.user_session_id and event.user_id

    # Replay: the used code is unknown.
    assert error(poll(http, realm, started["device_code"])) == (400, "invalid_grant", "Device code not valid")
    # The refresh token works like any other.
    refreshed = http.post(f"/realms/{realm.name}/protocol/openid-connect/token",
                          {"grant_type": "refresh_token", "refresh_token": body["refresh_token"], "client_id": "tv"})
    assert refreshed.status_code == 200


def test_without_openid_no_id_token(http, realm, client):
    started = authorize(http, realm, scope="email").json()
    sign_in(client, realm, started["user_code"])
    body = poll(http, realm, started["device_code"]).json()
    assert "access_token" in body and "id_token" not in body


def test_nonce_goes_into_the_id_token(http, realm, client):
    started = authorize(http, realm, nonce="n-0S6").json()
    sign_in(client, realm, started["user_code"])
    body = poll(http, realm, started["device_code"]).json()
    assert tokens.decode(realm, body["id_token"], issuer(realm))["nonce"] == "n-0S6"


def test_offline_access_gives_an_offline_token(http, realm, client):
    started = authorize(http, realm, scope="openid offline_access").json()
    sign_in(client, realm, started["user_code"])
    body = poll(http, realm, started["device_code"]).json()
    assert tokens.decode(realm, body["refresh_token"], issuer(realm))["typ"] == "Offline"
    assert UserSession.objects.filter(offline=True).count() == 1


def test_confidential_client(http, realm, client):
    started = authorize(http, realm, "box", SECRET).json()
    sign_in(client, realm, started["user_code"])
    assert error(poll(http, realm, started["device_code"], "box", "wrong"))[1] == "invalid_client"
    assert poll(http, realm, started["device_code"], "box", SECRET).status_code == 200


def test_missing_and_unknown_codes(http, realm):
    assert error(poll(http, realm, None)) == (400, "invalid_request", "Missing parameter: device_code")
    assert error(poll(http, realm, "")) == (400, "invalid_grant", "Device code not valid")
    assert error(poll(http, realm, "not-a-code")) == (400, "invalid_grant", "Device code not valid")
    assert Event.objects.filter(type="OAUTH2_DEVICE_CODE_TO_TOKEN_ERROR",
                                error="invalid_oauth2_device_code").count() == 3


def test_another_clients_code_is_refused_and_stays_usable(http, realm, client):
    started = authorize(http, realm).json()
    assert error(poll(http, realm, started["device_code"], "radio")) == (400, "invalid_grant", "unauthorized client")
    sign_in(client, realm, started["user_code"])
    assert error(poll(http, realm, started["device_code"], "radio"))[1] == "invalid_grant"
    assert poll(http, realm, started["device_code"]).status_code == 200


def test_client_switch_turned_off_after_the_request(http, realm, client):
    started = authorize(http, realm).json()
    sign_in(client, realm, started["user_code"])
    set_client_attributes(realm, "tv", **{"oauth2.device.authorization.grant.enabled": "false"})
    # Keycloak's token endpoint answers this one invalid_grant (its device endpoint unauthorized_client).
    assert error(poll(http, realm, started["device_code"])) == (
        400, "invalid_grant", "Client not allowed OAuth 2.0 Device Authorization Grant")
    assert Event.objects.get(type="OAUTH2_DEVICE_CODE_TO_TOKEN_ERROR").error == "not_allowed"
    set_client_attributes(realm, "tv", **{"oauth2.device.authorization.grant.enabled": "true"})
    assert poll(http, realm, started["device_code"]).status_code == 200


def test_slow_down_with_the_interval(http, realm):
    set_client_attributes(realm, "tv", **{"oauth2.device.polling.interval": "1"})
    started = authorize(http, realm).json()
    assert started["interval"] == 1
    code = started["device_code"]
    assert error(poll(http, realm, code))[1] == "authorization_pending"
    assert error(poll(http, realm, code)) == (400, "slow_down", "Slow down")
    assert error(poll(http, realm, code))[1] == "slow_down"
    assert Event.objects.filter(type="OAUTH2_DEVICE_CODE_TO_TOKEN_ERROR", error="slow_down").count() == 2
    # A client that adds 5 s after slow_down (RFC 8628 §3.5) is answered again; slow_down
    # did not move the clock, so the interval alone is enough here.
    time.sleep(1.1)
    assert error(poll(http, realm, code))[1] == "authorization_pending"
    assert error(poll(http, realm, code))[1] == "slow_down"


def test_realm_interval_governs_slow_down(http, realm):
    set_realm(realm, oauth2_device_polling_interval=30)
    code = authorize(http, realm).json()["device_code"]
    assert error(poll(http, realm, code))[1] == "authorization_pending"
    assert error(poll(http, realm, code))[1] == "slow_down"


def test_expired_code_answers_expired_token_once_then_is_gone(http, realm, client):
    set_client_attributes(realm, "tv", **{"oauth2.device.code.lifespan": "1"})
    started = authorize(http, realm).json()
    assert started["expires_in"] == 1
    time.sleep(1.1)
    assert error(poll(http, realm, started["device_code"])) == (400, "expired_token", "Device code is expired")
    assert Event.objects.get(type="OAUTH2_DEVICE_CODE_TO_TOKEN_ERROR").error == "expired_oauth2_device_code"
    assert not DeviceAuthorization.objects.exists()
    assert error(poll(http, realm, started["device_code"]))[1] == "invalid_grant"


def test_approval_after_expiry_gives_no_tokens(http, realm, client):
    started = authorize(http, realm).json()
    DeviceAuthorization.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    # The page refuses the code; had it been approved just before expiry, the poll still says expired.
    page = client.post(f"/realms/{realm.name}/device", {"device_user_code": started["user_code"]})
    assert "The code has expired" in page.content.decode()
    from django.core.cache import cache

    cache.clear()  # the cache's copy follows the row
    assert error(poll(http, realm, started["device_code"]))[1] == "expired_token"


def test_denied_code_answers_access_denied(http, realm, client):
    started = authorize(http, realm).json()
    denied = sign_in(client, realm, started["user_code"], consent="deny")
    assert denied["Location"] == f"/realms/{realm.name}/device/status?error=access_denied"
    assert error(poll(http, realm, started["device_code"])) == (
        400, "access_denied", "The end user denied the authorization request")
    # Not consumed by the poll that reports it (Keycloak keeps answering so until it expires).
    assert error(poll(http, realm, started["device_code"]))[1] == "access_denied"
    assert DeviceAuthorization.objects.get().state == "denied"


def test_a_pending_poll_makes_no_database_query(http, realm, django_assert_num_queries):
    code = authorize(http, realm).json()["device_code"]
    assert error(poll(http, realm, code))[1] == "authorization_pending"  # warms the realm's caches
    with django_assert_num_queries(0):
        assert error(poll(http, realm, code)) == (400, "authorization_pending", PENDING)
    # Keycloak records no event for a poll that changes nothing (events are on in this realm).
    assert not Event.objects.filter(type="OAUTH2_DEVICE_CODE_TO_TOKEN_ERROR").exists()


def test_a_slow_down_poll_reads_no_table_either(http, realm):
    set_client_attributes(realm, "tv", **{"oauth2.device.polling.interval": "30"})
    set_realm(realm, events_enabled=False)
    code = authorize(http, realm).json()["device_code"]
    poll(http, realm, code)
    with CaptureQueriesContext(connection) as queries:
        assert error(poll(http, realm, code))[1] == "slow_down"
    assert len(queries) == 0


def test_poll_survives_a_flushed_cache(http, realm, client):
    from django.core.cache import cache

    started = authorize(http, realm).json()
    cache.delete(f"oidc:device:{DeviceAuthorization.objects.get().digest}")
    assert error(poll(http, realm, started["device_code"]))[1] == "authorization_pending"
    sign_in(client, realm, started["user_code"])
    cache.delete(f"oidc:device:{DeviceAuthorization.objects.get().digest}")
    assert poll(http, realm, started["device_code"]).status_code == 200


def test_concurrent_redemption_yields_tokens_once(http, realm, client):
    """The claim is one UPDATE guarded by the state: a second redemption of the same approved row
    (a poll racing the first, seen through a stale cache entry) gets invalid_grant."""
    from django.core.cache import cache

    started = authorize(http, realm).json()
    sign_in(client, realm, started["user_code"])
    key = f"oidc:device:{DeviceAuthorization.objects.get().digest}"
    stale = cache.get(key)
    assert poll(http, realm, started["device_code"]).status_code == 200
    cache.set(key, stale)
    assert error(poll(http, realm, started["device_code"])) == (400, "invalid_grant", "Device code not valid")


def test_disabled_user_gets_no_tokens(http, realm, client):
    from realms.models import User

    started = authorize(http, realm).json()
    sign_in(client, realm, started["user_code"])
    alice = User.objects.get(realm=realm, username="alice")
    alice.enabled = False
    alice.save()  # as the Admin API and the console do: the session's copies are dropped
    assert error(poll(http, realm, started["device_code"]))[1] == "invalid_grant"


def test_feature_off_is_unsupported_grant_type(http, realm, settings):
    code = authorize(http, realm).json()["device_code"]
    settings.IDP_FEATURES_DISABLED = "device-flow"
    assert error(poll(http, realm, code))[1] == "unsupported_grant_type"


VERIFIER = "v" * 43 + "-device-verifier"


def test_pkce_bound_device_code_needs_its_verifier(http, realm, client):
    from oidc.codes import s256_challenge

    started = authorize(http, realm, code_challenge=s256_challenge(VERIFIER), code_challenge_method="S256").json()
    sign_in(client, realm, started["user_code"])
    from tests.oidc.device.conftest import GRANT, token_url

    def redeem(**extra):
        return http.post(token_url(realm), {"grant_type": GRANT, "client_id": "tv",
                                            "device_code": started["device_code"], **extra})

    assert error(redeem()) == (400, "invalid_grant", "PKCE code verifier not specified")
    # The failed attempt burnt the code, as a failed code exchange does.
    assert error(redeem(code_verifier=VERIFIER))[1] == "invalid_grant"

    again = authorize(http, realm, code_challenge=s256_challenge(VERIFIER), code_challenge_method="S256").json()
    from django.test import Client as HttpClient

    sign_in(HttpClient(), realm, again["user_code"])
    assert http.post(token_url(realm), {"grant_type": GRANT, "client_id": "tv", "device_code": again["device_code"],
                                        "code_verifier": VERIFIER}).status_code == 200


def test_pkce_parameters_at_the_device_endpoint(http, realm):
    assert error(authorize(http, realm, code_challenge_method="S256")) == (
        400, "invalid_request", "Missing parameter: code_challenge")
    assert error(authorize(http, realm, code_challenge="short", code_challenge_method="S256")) == (
        400, "invalid_request", "Invalid parameter: code_challenge")
    assert error(authorize(http, realm, code_challenge="c" * 43, code_challenge_method="S512")) == (
        400, "invalid_request", "Invalid parameter: code_challenge_method")
    set_client_attributes(realm, "tv", **{"pkce.code.challenge.method": "S256"})
    assert error(authorize(http, realm)) == (400, "invalid_request", "Missing parameter: code_challenge_method")
    assert error(authorize(http, realm, code_challenge="c" * 43, code_challenge_method="plain")) == (
        400, "invalid_request", "Invalid parameter: code challenge method is not matching the configured one")
    assert authorize(http, realm, code_challenge="c" * 43, code_challenge_method="S256").status_code == 200
