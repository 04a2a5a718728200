"""The refresh's read (decision 0113): the SSO session and this client's session from the shared
cache in one call, against a real Redis as every node shares it. Whatever ends or changes a client
session drops its copy there, so the next refresh on any node reads the truth; the copy follows
the idle timer; under ``stateless`` nothing is copied."""
import os
from datetime import timedelta

import pytest
import redis
from django.core.cache import caches

from idp.config import redis_cache
from realms.models import ClientSession
from realms.sso import sessions

from .conftest import SECRET, basic, client_of, code_for, exchange, refresh, url


@pytest.fixture
def shared(settings):
    """Django's default cache on the test Redis; ``shared.copies(...)`` reads it on a connection
    of its own, as another node would."""
    settings.CACHES = {**settings.CACHES, "default": redis_cache(os.environ["IDP_TEST_REDIS_URL"])}
    cache = caches["default"]
    cache.clear()
    other_node = redis.Redis.from_url(os.environ["IDP_TEST_REDIS_URL"])
    cache.copies = lambda user_session: sorted(
        k.decode().split("idp:clientsession:", 1)[1] for k in other_node.keys(f"*idp:clientsession:{user_session.pk}:*"))
    yield cache
    cache.clear()
    other_node.close()


def _refreshed(http, realm, alice, measure):
    """Tokens whose client session is in the cache: a second refresh reads no row."""
    code, user_session = code_for(realm, alice)
    body = exchange(http, realm, code).json()
    first = refresh(http, realm, body["refresh_token"])
    assert first.status_code == 200, first.content
    with measure() as cost:
        second = refresh(http, realm, first.json()["refresh_token"])
    assert second.status_code == 200, second.content
    assert cost.counts == (0, 1), (cost.queries, cost.cache_calls)
    return second.json(), user_session, code


def _refused(response, description):
    assert response.status_code == 400, response.content
    assert response.json() == {"error": "invalid_grant", "error_description": description}


def test_a_revoked_refresh_token_drops_the_copy_and_the_next_refresh_is_refused(http, realm, alice, shared, measure):
    tokens, user_session, _ = _refreshed(http, realm, alice, measure)
    app = client_of(realm, "app")
    assert shared.copies(user_session) == [f"{user_session.pk}:{app.pk}"]
    revoked = http.post(url(realm, "revoke"), {"token": tokens["refresh_token"]},
                        HTTP_AUTHORIZATION=basic("app", SECRET))
    assert revoked.status_code == 200
    assert shared.copies(user_session) == []
    _refused(refresh(http, realm, tokens["refresh_token"]), "Session doesn't have required client")


def test_a_replayed_code_ends_the_client_session_and_its_copy(http, realm, alice, shared, measure):
    tokens, user_session, code = _refreshed(http, realm, alice, measure)
    assert exchange(http, realm, code).status_code == 400
    assert shared.copies(user_session) == []
    _refused(refresh(http, realm, tokens["refresh_token"]), "Session doesn't have required client")


def test_ending_the_sso_session_elsewhere_refuses_the_next_refresh(http, realm, alice, shared, measure):
    tokens, user_session, _ = _refreshed(http, realm, alice, measure)
    sessions.end_session(ClientSession.objects.get(user_session_id=user_session.pk).user_session)
    _refused(refresh(http, realm, tokens["refresh_token"]), "Session not active")


def test_a_sign_in_again_drops_the_copy_and_the_refresh_reads_the_new_row(http, realm, alice, shared, measure):
    tokens, user_session, _ = _refreshed(http, realm, alice, measure)
    app = client_of(realm, "app")
    sessions.get_or_create_client_session(user_session, app, scope="openid profile", notes={"acr": "2"})
    assert shared.copies(user_session) == []
    with measure() as cost:
        assert refresh(http, realm, tokens["refresh_token"]).status_code == 200
    assert cost.counts == (1, 2), (cost.queries, cost.cache_calls)  # the row read, then put
    copy = shared.get(f"idp:clientsession:{user_session.pk}:{app.pk}")
    assert (copy.scope, copy.notes["acr"]) == ("openid profile", "2")


def test_the_copy_follows_the_idle_timer(http, realm, alice, shared, measure, monkeypatch):
    tokens, user_session, _ = _refreshed(http, realm, alice, measure)
    app = client_of(realm, "app")
    key = f"idp:clientsession:{user_session.pk}:{app.pk}"
    before = shared.get(key).last_refresh
    monkeypatch.setattr(sessions, "TOUCH_INTERVAL", timedelta(0))  # every refresh touches
    with measure() as cost:
        assert refresh(http, realm, tokens["refresh_token"]).status_code == 200
    # Both timers written, both copies put in one call: the read, then the put.
    assert (len(cost.queries), cost.cache_calls) == (2, ["default.get_many", "default.set_many"]), cost.queries
    row = ClientSession.objects.get(user_session_id=user_session.pk, client=app)
    assert shared.get(key).last_refresh == row.last_refresh > before


def test_a_client_session_ended_since_its_copy_was_read_is_not_put_back(http, realm, alice, shared, measure,
                                                                       monkeypatch):
    tokens, user_session, _ = _refreshed(http, realm, alice, measure)
    app = client_of(realm, "app")
    client_session = sessions.session_with_client(realm, user_session.pk, app)[1]
    ClientSession.objects.filter(pk=client_session.pk).delete()  # another node, between read and touch
    monkeypatch.setattr(sessions, "TOUCH_INTERVAL", timedelta(0))
    shared.delete(f"idp:clientsession:{user_session.pk}:{app.pk}")
    sessions.touch(client_session.user_session, client_session)
    assert shared.copies(user_session) == []


def test_stateless_copies_no_client_session(http, realm, alice, shared, settings):
    settings.IDP_FEATURES = "stateless"
    code, user_session = code_for(realm, alice)
    body = exchange(http, realm, code).json()
    for _ in range(2):
        answer = refresh(http, realm, body["refresh_token"])
        assert answer.status_code == 200, answer.content
    assert shared.copies(user_session) == []
    sessions.end_client_session(user_session.pk, client_of(realm, "app").pk)
    _refused(refresh(http, realm, body["refresh_token"]), "Session doesn't have required client")


def test_userinfo_and_introspection_read_the_copy_and_see_the_client_session_end(http, realm, alice, shared, measure):
    """They check the token's client session through its copy, read with the SSO session: no
    query; once the client session ends (its refresh token revoked) both refuse the access token."""
    tokens, user_session, _ = _refreshed(http, realm, alice, measure)
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {tokens['access_token']}"}
    auth = {"HTTP_AUTHORIZATION": basic("app", SECRET)}
    assert http.get(url(realm, "userinfo"), **bearer).status_code == 200  # the revocation marks loaded
    with measure() as cost:
        assert http.get(url(realm, "userinfo"), **bearer).status_code == 200
    assert cost.counts == (0, 2), (cost.queries, cost.cache_calls)  # the revocation mark; the two sessions
    with measure() as cost:
        assert http.post(url(realm, "token/introspect"), {"token": tokens["access_token"]}, **auth).json()["active"]
    assert cost.counts == (0, 1), (cost.queries, cost.cache_calls)
    assert http.post(url(realm, "revoke"), {"token": tokens["refresh_token"]}, **auth).status_code == 200
    assert shared.copies(user_session) == []
    assert http.get(url(realm, "userinfo"), **bearer).status_code == 401
    assert http.post(url(realm, "token/introspect"), {"token": tokens["access_token"]}, **auth).json() == {"active": False}
