"""A refresh leaves nothing behind that grows (decision 0117): the same refresh token presented
again and again, as the benchmark does, with the idle timers written between, keeps the shared
cache's keys, the two session copies' sizes, the rows and the client session's notes as the first
refresh left them, and each refresh at no query and one Redis call."""
import os
from datetime import timedelta

import redis
import time_machine
from django.utils import timezone

from realms.models import ClientSession, Event, UserSession
from realms.sso import sessions

from .conftest import code_for, exchange, refresh
from .test_refresh_copies import shared  # noqa: F401  (the fixture: Django's cache on the test Redis)

STEP = sessions.TOUCH_INTERVAL + timedelta(seconds=1)  # past it, a refresh writes the idle timers


def _held(server, realm):
    copies = {k: server.strlen(k) for k in server.keys("*idp:*session:*")}
    client_sessions = ClientSession.objects.filter(user_session__realm=realm)
    return (server.dbsize(), copies, UserSession.objects.filter(realm=realm).count(),
            [c.notes for c in client_sessions], Event.objects.filter(realm=realm).count())


def test_refreshes_of_one_token_leave_the_cache_and_rows_as_they_were(http, realm, alice, shared, measure):  # noqa: F811
    code, _ = code_for(realm, alice)
    token = exchange(http, realm, code).json()["refresh_token"]
    assert refresh(http, realm, token).status_code == 200  # the client session's copy put
    server = redis.Redis.from_url(os.environ["IDP_TEST_REDIS_URL"])
    start, before = timezone.now(), None
    for n in range(44):
        # Every fourth refresh past the touch interval: the idle timers written, both copies put again.
        with time_machine.travel(start + (n // 4 + 1) * STEP, tick=False):
            with measure() as cost:
                response = refresh(http, realm, token)
        assert response.status_code == 200, response.content
        assert cost.counts[0] <= 2 and cost.counts[1] <= 2, (n, cost.queries, cost.cache_calls)
        if n == 3:  # as the first touch left them (the first put of the SSO session's copy is the sign-in's)
            before = _held(server, realm)
            assert len(before[1]) == 2, before  # the SSO session's copy and the client session's
    with time_machine.travel(start + 11 * STEP, tick=False):  # within the last step: nothing to write
        with measure() as cost:
            assert refresh(http, realm, token).status_code == 200
    assert cost.counts == (0, 1), (cost.queries, cost.cache_calls)
    after = _held(server, realm)
    server.close()
    assert after == before
