"""``manage.py worker`` and ``manage.py beat`` as an operator runs them (production settings,
PostgreSQL, Redis): beat sends the purge on its schedule, the worker runs it, expired rows go and
live ones stay."""
import os
import time

import psycopg
import pytest

from tests.idp.test_modes import base_env, manage, production_database, stop  # noqa: F401 (fixture)

pytestmark = pytest.mark.services

ROWS = """
from datetime import timedelta
from django.utils import timezone
from realms.models import Event, Realm, UserSession
from realms.users.accounts import create_user
realm, now = Realm.objects.get(name="master"), timezone.now()
Event.objects.create(realm=realm, type="LOGIN", expires_at=now - timedelta(days=1))
Event.objects.create(realm=realm, type="LOGOUT", expires_at=now + timedelta(days=1))
user = create_user(realm, "sleeper", password="Sleeper-pass-1")
UserSession.objects.create(realm=realm, user=user, started=now - timedelta(days=2), last_refresh=now - timedelta(days=2))
UserSession.objects.create(realm=realm, user=user)
"""


def _rows(url):
    with psycopg.connect(url) as conn:
        events = {t for (t,) in conn.execute("SELECT type FROM realms_event")}
        sessions = conn.execute("SELECT count(*) FROM realms_usersession").fetchone()[0]
    return events, sessions


def test_beat_sends_the_purge_and_the_worker_runs_it(production_database, tmp_path):
    redis_url = os.environ["IDP_TEST_REDIS_URL"].rsplit("/", 1)[0] + "/7"  # a queue of its own
    env = base_env(DJANGO_SETTINGS_MODULE="idp.settings.prod", IDP_HOSTNAME="127.0.0.1", IDP_SECRET_KEY="z" * 50,
                   IDP_DB_URL=production_database, IDP_REDIS_URL=redis_url, IDP_VAR_DIR=str(tmp_path),
                   IDP_PURGE_INTERVAL="1")
    for args in (("migrate", "--no-input", "-v", "0"), ("shell", "-c", ROWS)):
        done = manage(*args, env=env)
        out, _ = done.communicate(timeout=180)
        assert done.returncode == 0, out
    assert _rows(production_database) == ({"LOGIN", "LOGOUT"}, 2)
    worker = manage("worker", "--", "--pool", "threads", "--concurrency", "2", "--without-gossip", "--without-mingle",
                    "--without-heartbeat", env=env)
    beat = manage("beat", "--", "--max-interval", "1", env=env)
    try:
        deadline = time.monotonic() + 60
        while _rows(production_database) != ({"LOGOUT"}, 1) and time.monotonic() < deadline:
            assert worker.poll() is None and beat.poll() is None
            time.sleep(0.2)
        assert _rows(production_database) == ({"LOGOUT"}, 1)
    finally:
        stop(beat)
        stop(worker)
    logs = beat.stdout.read() + worker.stdout.read()
    assert "realms.purge" in logs and "Traceback" not in logs, logs
