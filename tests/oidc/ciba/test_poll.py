"""CIBA in poll mode, in-process: the backchannel authentication endpoint, the authentication
channel (a loopback server that records the request; the test answers its callback with the
recorded bearer token), the ciba grant and its errors."""
import time

from django.db import connection
from django.test.utils import CaptureQueriesContext

from oidc import tokens
from oidc.models import BackchannelAuthentication
from tests.oidc.ciba.conftest import answer, poll, set_realm_attributes, start

PENDING = "The authorization request is still pending as the end-user hasn't yet been authenticated."


def error(response):
    return response.status_code, response.json()["error"], response.json().get("error_description")


def issuer(realm):
    return f"http://testserver/realms/{realm.name}"


def test_poll_flow_from_request_to_tokens(http, realm, alice, channel):
    started = start(http, realm, binding_message="W4SCT", acr_values="gold")
    assert started.status_code == 200, started.content
    body = started.json()
    assert set(body) == {"auth_req_id", "expires_in"}  # cibaInterval 0: no interval
    assert body["expires_in"] == 120
    assert started["Cache-Control"] == "no-store"

    sent = channel.last
    assert sent["path"] == "/ciba/authenticate"
    assert sent["headers"]["Content-Type"] == "application/json"
    assert sent["json"]["login_hint"] == "alice"
    assert sent["json"]["binding_message"] == "W4SCT"
    assert sent["json"]["acr_values"] == "gold"
    assert sent["json"]["is_consent_required"] is False
    assert sent["json"]["scope"].split()[0] == "openid"
    claims = tokens.decode(realm, channel.bearer(), issuer(realm))
    assert claims["azp"] == "ciba-app" and claims["aud"] == issuer(realm) and claims["sub"] == alice.pk
    assert claims["typ"] == "Bearer"
    # Only digests are stored: neither the auth_req_id nor the channel token's id.
    row = BackchannelAuthentication.objects.get()
    assert body["auth_req_id"] not in (row.digest, row.result_digest)
    assert claims["jti"] not in (row.digest, row.result_digest)

    assert error(poll(http, realm, body["auth_req_id"])) == (400, "authorization_pending", PENDING)
    assert answer(http, realm, channel.bearer()).status_code == 200
    row.refresh_from_db()
    assert row.state == "approved" and row.user_session_id

    granted = poll(http, realm, body["auth_req_id"])
    assert granted.status_code == 200, granted.content
    tokens_ = granted.json()
    assert {"access_token", "refresh_token", "id_token"} <= set(tokens_)
    access = tokens.decode(realm, tokens_["access_token"], issuer(realm))
    id_token = tokens.decode(realm, tokens_["id_token"], issuer(realm))
    assert access["sub"] == id_token["sub"] == alice.pk
    assert access["azp"] == "ciba-app" and access["sid"] == row.user_session_id
    assert not BackchannelAuthentication.objects.exists()  # deleted when redeemed

    # Single use: the same auth_req_id again is unknown.
    assert error(poll(http, realm, body["auth_req_id"])) == (400, "invalid_grant", "Invalid Auth Req ID")


def test_token_events(http, realm, channel):
    auth_req_id = start(http, realm).json()["auth_req_id"]
    answer(http, realm, channel.bearer())
    assert poll(http, realm, auth_req_id).status_code == 200
    from realms.models import Event

    types = list(Event.objects.filter(realm=realm).order_by("time").values_list("type", flat=True))
    assert "LOGIN" in types and types[-1] == "AUTHREQID_TO_TOKEN"


def test_pending_poll_writes_nothing(http, realm, channel):
    auth_req_id = start(http, realm).json()["auth_req_id"]
    from realms.models import Realm

    Realm.objects.filter(pk=realm.pk).update(events_enabled=False)
    from realms.data import realm_cache

    realm_cache.clear()
    poll(http, realm, auth_req_id)  # warms the realm's and the client's caches
    with CaptureQueriesContext(connection) as queries:
        assert error(poll(http, realm, auth_req_id))[1] == "authorization_pending"
    writes = [q["sql"] for q in queries if q["sql"].split()[0].upper() in ("INSERT", "UPDATE", "DELETE")]
    assert writes == []


def test_slow_down_when_polled_sooner_than_the_interval(http, realm, channel):
    set_realm_attributes(realm, cibaInterval="2")
    started = start(http, realm).json()
    assert started["interval"] == 2
    auth_req_id = started["auth_req_id"]
    assert error(poll(http, realm, auth_req_id))[1] == "authorization_pending"
    assert error(poll(http, realm, auth_req_id)) == (400, "slow_down", "too early to access")
    time.sleep(2.1)
    # slow_down did not move the clock; the interval has passed.
    assert error(poll(http, realm, auth_req_id))[1] == "authorization_pending"
    assert error(poll(http, realm, auth_req_id))[1] == "slow_down"


def test_expired_request_answers_expired_token_once_then_is_gone(http, realm, channel):
    started = start(http, realm, requested_expiry="1").json()
    assert started["expires_in"] == 1
    time.sleep(1.2)
    assert error(poll(http, realm, started["auth_req_id"])) == (400, "expired_token", "authentication timed out")
    assert not BackchannelAuthentication.objects.exists()
    assert error(poll(http, realm, started["auth_req_id"]))[1] == "invalid_grant"


def test_an_approval_after_expiry_gives_no_tokens(http, realm, channel):
    auth_req_id = start(http, realm, requested_expiry="1").json()["auth_req_id"]
    answer(http, realm, channel.bearer())
    time.sleep(1.2)
    assert error(poll(http, realm, auth_req_id))[1] == "expired_token"


def test_denied_by_the_user_or_cancelled(http, realm, channel):
    for status in ("UNAUTHORIZED", "CANCELLED"):
        auth_req_id = start(http, realm).json()["auth_req_id"]
        assert answer(http, realm, channel.bearer(), status).status_code == 200
        assert error(poll(http, realm, auth_req_id)) == (400, "access_denied", "not authorized")
        # A denial is not consumed: it answers access_denied until it expires.
        assert error(poll(http, realm, auth_req_id))[1] == "access_denied"
        assert BackchannelAuthentication.objects.get(state="denied")
        BackchannelAuthentication.objects.all().delete()


def test_auth_req_id_of_another_client(http, realm, channel):
    auth_req_id = start(http, realm).json()["auth_req_id"]
    answer(http, realm, channel.bearer())
    assert error(poll(http, realm, auth_req_id, client_id="other-app")) == (400, "invalid_grant", "unauthorized client")
    # The owner still gets its tokens.
    assert poll(http, realm, auth_req_id).status_code == 200


def test_missing_and_unknown_auth_req_id(http, realm, channel):
    assert error(poll(http, realm, None)) == (400, "invalid_request", "Missing parameter: auth_req_id")
    assert error(poll(http, realm, "")) == (400, "invalid_grant", "Invalid Auth Req ID")
    assert error(poll(http, realm, "not-an-id")) == (400, "invalid_grant", "Invalid Auth Req ID")


def test_grant_refused_to_a_client_without_ciba(http, realm, channel):
    auth_req_id = start(http, realm).json()["auth_req_id"]
    assert error(poll(http, realm, auth_req_id, client_id="plain-app")) == (
        400, "invalid_grant", "Client not allowed OIDC CIBA Grant")


def test_the_grant_is_refused_when_the_client_switch_goes_off(http, realm, channel):
    from tests.oidc.ciba.conftest import set_client_attributes

    auth_req_id = start(http, realm).json()["auth_req_id"]
    answer(http, realm, channel.bearer())
    set_client_attributes(realm, "ciba-app", **{"oidc.ciba.grant.enabled": "false"})
    assert error(poll(http, realm, auth_req_id)) == (400, "invalid_grant", "Client not allowed OIDC CIBA Grant")


def test_expired_requests_are_left_to_the_periodic_purge(http, realm, channel):
    from datetime import timedelta

    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from realms import purges

    start(http, realm)
    BackchannelAuthentication.objects.update(expires_at=timezone.now() - timedelta(hours=1))
    with CaptureQueriesContext(connection) as queries:
        start(http, realm)
    assert not [q for q in queries if q["sql"].startswith("DELETE")]  # no sweep per request
    assert BackchannelAuthentication.objects.count() == 2
    assert purges.run()["oidc.backchannel_requests"] == 1
    assert BackchannelAuthentication.objects.count() == 1


def test_single_use_rests_on_the_database_not_the_cache(http, realm, channel):
    # Another process's cache may still say "approved" after this one redeemed the request: the
    # delete guarded by state = approved is what makes the auth_req_id single use.
    from django.core.cache import cache

    from oidc.ciba import REQUESTS, digest

    auth_req_id = start(http, realm).json()["auth_req_id"]
    answer(http, realm, channel.bearer())
    stale = cache.get(REQUESTS._key(digest(auth_req_id)))
    assert stale["state"] == "approved"
    assert poll(http, realm, auth_req_id).status_code == 200
    cache.set(REQUESTS._key(digest(auth_req_id)), stale, 60)
    assert error(poll(http, realm, auth_req_id)) == (400, "invalid_grant", "Invalid Auth Req ID")


def test_a_cold_cache_falls_back_to_the_table(http, realm, channel):
    from django.core.cache import cache

    auth_req_id = start(http, realm).json()["auth_req_id"]
    cache.clear()
    assert error(poll(http, realm, auth_req_id))[1] == "authorization_pending"
    answer(http, realm, channel.bearer())
    cache.clear()
    assert poll(http, realm, auth_req_id).status_code == 200
