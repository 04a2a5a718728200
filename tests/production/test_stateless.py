"""The feature ``stateless`` (two sites, decision 0094) beside the default: readiness checks the
site's Redis in both modes (it carries Celery either way), and SSO sessions are read and written
in their table once, with no copy in the database cache (decision 0109)."""
import json
import os
import subprocess
import sys

import pytest

from tests.idp.test_modes import base_env, free_port

READY = """
import django, json
django.setup()
from django.conf import settings
from idp.management_server import redis_ready
print(json.dumps([settings.CACHES["default"]["BACKEND"], redis_ready()]))
"""


@pytest.mark.parametrize("features, cache", [("", "idp.cache.RedisCache"), ("stateless", "idp.db_cache.DatabaseCache")])
def test_readiness_checks_the_sites_redis_in_both_modes(features, cache):
    """Production settings as a node builds them: Redis UP when it answers, DOWN when it does not."""
    def ready(redis_url):
        env = base_env(DJANGO_SETTINGS_MODULE="idp.settings.prod", IDP_FEATURES=features, IDP_REDIS_URL=redis_url,
                       IDP_DB_URL=os.environ.get("IDP_TEST_DB_URL", "postgresql://idp@127.0.0.1/idp"))
        done = subprocess.run([sys.executable, "-c", READY], env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    assert ready(os.environ["IDP_TEST_REDIS_URL"]) == [cache, [True, "UP"]]
    assert ready(f"redis://127.0.0.1:{free_port()}/0") == [cache, [False, "ConnectionError"]]


@pytest.fixture
def database_cache(settings, fresh_caches):
    """The default cache in a table of the test database, as ``stateless`` makes it (on the test's
    own connection here, so the table goes with the test's transaction)."""
    from django.core.management import call_command

    settings.CACHES = {**settings.CACHES, "default": {
        "BACKEND": "idp.db_cache.DatabaseCache", "LOCATION": "idp_stateless_test"}}
    call_command("createcachetable", verbosity=0)

    def session_copies():
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM idp_stateless_test WHERE cache_key LIKE %s", ["%usersession%"])
            return cursor.fetchone()[0]

    return session_copies


def _signed_in(realm_name):
    from django.db import transaction

    from realms.models import Client, User
    from realms.representation.importer import import_realm
    from realms.sso import sessions

    realm = import_realm({"realm": realm_name, "enabled": True, "users": [{"username": "ann", "enabled": True}],
                          "clients": [{"clientId": "app", "publicClient": True}]}).realm
    with transaction.atomic():  # the copy is written when the sign-in commits
        user_session = sessions.create_user_session(realm, User.objects.get(realm=realm, username="ann"))
        sessions.get_or_create_client_session(user_session, Client.objects.get(realm=realm, client_id="app"))
    return realm, user_session


@pytest.mark.postgresql
@pytest.mark.django_db
@pytest.mark.parametrize("stateless", [True, False])
def test_sessions_are_read_from_their_table_with_no_copy_under_stateless(settings, database_cache, stateless):
    """Stateless: no copy of the session in the cache table, and a change another node makes to the
    row (here: SQL this process receives no signal for) is seen at once. The default mode keeps
    its copy, which is what the cache is for when it is Redis: the same steps see the stale copy."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from realms.sso import sessions

    settings.IDP_FEATURES = "stateless" if stateless else ""
    realm, user_session = _signed_in("st")
    sessions.set_note(user_session, "n", "v")
    sessions.touch(user_session)
    with CaptureQueriesContext(connection) as read:
        assert sessions.get_valid_session(realm, user_session.pk).notes == {"n": "v"}
    assert database_cache() == (0 if stateless else 1)
    assert len(read.captured_queries) == 1  # the row with its user, or the copy: one round trip either way
    assert ("idp_stateless_test" in read.captured_queries[0]["sql"]) is not stateless

    with connection.cursor() as cursor:  # another node ends the session
        cursor.execute("DELETE FROM realms_clientsession WHERE user_session_id = %s", [user_session.pk])
        cursor.execute("DELETE FROM realms_usersession WHERE id = %s", [user_session.pk])
    seen = sessions.get_valid_session(realm, user_session.pk)
    assert (seen is None) is stateless


@pytest.mark.postgresql
@pytest.mark.django_db
@pytest.mark.parametrize("stateless", [True, False])
def test_a_lockout_outlives_an_emptied_redis_only_under_stateless(settings, database_cache, stateless):
    """Login failures are in the shared cache: with ``stateless`` a table of the database, so a
    lockout survives the site's Redis emptied (FLUSHALL); by default Redis, which forgets it, as
    Keycloak forgets its loginFailures cache on a full restart (docs/operations/faults.md)."""
    import redis

    from realms.models import User
    from realms.representation.importer import import_realm
    from realms.signin import bruteforce

    site_redis = os.environ["IDP_TEST_REDIS_URL"]
    if not stateless:
        settings.CACHES = {**settings.CACHES, "default": {"BACKEND": "idp.cache.RedisCache", "LOCATION": site_redis}}
    realm = import_realm({"realm": "bf", "enabled": True, "bruteForceProtected": True, "failureFactor": 2,
                          "waitIncrementSeconds": 600, "maxFailureWaitSeconds": 900,
                          "users": [{"username": "ann", "enabled": True}]}).realm
    user = User.objects.get(realm=realm, username="ann")
    for _ in range(2):
        bruteforce.record_failure(realm, user, "192.0.2.1")
    assert bruteforce.is_locked(realm, user)

    redis.Redis.from_url(site_redis).flushall()
    assert bruteforce.is_locked(realm, user) is stateless
