"""The database cache of the feature ``stateless`` (idp.db_cache) on the test PostgreSQL: Django's
cache API unchanged, ``add`` and ``incr`` exact when nodes race, expired rows replaced and purged,
and its writes independent of the request's transaction (its own connection, as Redis was); the
production settings choose it only with the feature on, dev mode refuses it, and ``/lb-check``
answers only with it; libpq's host lists in IDP_DB_URL."""
import importlib
import subprocess
import sys
import threading

import pytest
from django.core.cache import caches
from django.core.management import call_command
from django.db import connections, transaction

from idp import db_cache
from idp.config import ConfigError, _setting_problems, database_from_url
from tests.idp.test_modes import ROOT, base_env

TABLE = "idp_test_cache"


@pytest.fixture
def db_backend(settings, django_db_setup, django_db_blocker):
    """The backend on its own connection (alias ``cache``) to the test database, its table made by
    ``createcachetable`` as ``manage.py start`` makes it. Outside a test case's transaction (the
    test drops what it made), as the nodes that race in these tests would be."""
    with django_db_blocker.unblock():
        connections.settings["cache"] = dict(connections.settings["default"])
        settings.CACHES = {**settings.CACHES, "shared": {
            "BACKEND": "idp.db_cache.DatabaseCache", "LOCATION": TABLE, "OPTIONS": {"DATABASE": "cache"}}}
        call_command("createcachetable", verbosity=0)
        try:
            yield caches["shared"]
        finally:
            with connections["default"].cursor() as cursor:
                cursor.execute(f"DROP TABLE {TABLE}")
            connections["cache"].close()
            del connections.settings["cache"]


@pytest.mark.postgresql
def test_cache_api_round_trips(db_backend):
    cache = db_backend
    cache.set("k", {"a": [1, 2]}, 30)
    cache.set("digits", "123")
    cache.set("flag", True)
    assert cache.get("k") == {"a": [1, 2]} and cache.get("missing", "d") == "d"
    assert cache.get("digits") == "123" and cache.get("flag") is True
    assert cache.add("n", 1, None) and not cache.add("n", 5, None)
    assert cache.incr("n") == 2 and cache.decr("n", 5) == -3 and cache.get("n") == -3
    with pytest.raises(ValueError):
        cache.incr("absent")
    with pytest.raises(ValueError):
        cache.incr("k")  # not a number
    cache.set_many({"x": 1, "y": 2})
    assert cache.get_many(["x", "y", "absent"]) == {"x": 1, "y": 2}
    assert cache.has_key("x") and not cache.has_key("absent")
    assert cache.touch("x", 60) and not cache.touch("absent", 60)
    assert cache.delete("x") and not cache.delete("x")
    cache.delete_many(["y", "k"])
    assert cache.get_many(["y", "k"]) == {}
    cache.clear()
    assert cache.get("n") is None


@pytest.mark.postgresql
def test_keys_longer_than_the_column_are_kept_by_digest(db_backend):
    long_key, other = "idp:broker-logout-jti:" + "j" * 1000, "idp:broker-logout-jti:" + "j" * 999 + "k"
    assert db_backend.add(long_key, 1, 60) and not db_backend.add(long_key, 1, 60)
    assert db_backend.get(long_key) == 1 and db_backend.get(other) is None


@pytest.mark.postgresql
def test_expired_rows_count_as_absent_and_are_replaced_then_purged(db_backend):
    cache = db_backend
    cache.set("gone", 1, 0)  # a zero timeout: expired at once
    assert cache.get("gone") is None and not cache.has_key("gone")
    with pytest.raises(ValueError):
        cache.incr("gone")
    assert cache.add("gone", 7, 60) and cache.get("gone") == 7  # the expired row gave way
    cache.set("old", 1, 0)
    cache.set("live", 1, 60)
    assert cache.purge_expired() == 1
    assert cache.get_many(["gone", "live"]) == {"gone": 7, "live": 1}


@pytest.mark.postgresql
def test_writes_purge_expired_rows_every_so_often(db_backend, monkeypatch):
    monkeypatch.setattr(db_cache, "PURGE_EVERY", 3)

    def expired_rows():
        with connections["cache"].cursor() as cursor:
            cursor.execute(f"SELECT count(*) FROM {TABLE} WHERE expires <= now()")
            return cursor.fetchone()[0]

    db_backend.set("old", 1, 0)
    db_backend.add("a", 1)
    assert expired_rows() == 1  # two writes: kept until the third
    db_backend.set("b", 1)
    assert expired_rows() == 0 and db_backend.get_many(["a", "b"]) == {"a": 1, "b": 1}


def _race(threads, work):
    results, barrier = [], threading.Barrier(threads)

    def run():
        barrier.wait()
        try:
            results.append(work())
        finally:
            connections.close_all()  # each thread's own connections

    workers = [threading.Thread(target=run) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return results


@pytest.mark.postgresql
def test_add_lets_one_of_racing_nodes_win(db_backend):
    assert sorted(_race(8, lambda: db_backend.add("jti", 1, 60))) == [False] * 7 + [True]


@pytest.mark.postgresql
def test_incr_counts_every_increment_of_racing_nodes(db_backend):
    db_backend.set("failures", 0, 60)
    _race(8, lambda: [db_backend.incr("failures") for _ in range(25)])
    assert db_backend.get("failures") == 200


@pytest.mark.postgresql
def test_writes_are_kept_when_the_request_transaction_rolls_back(db_backend):
    with pytest.raises(RuntimeError), transaction.atomic():
        db_backend.add("used-code", 1, 60)
        raise RuntimeError("the request failed")
    assert db_backend.get("used-code") == 1


def _prod_caches(monkeypatch, **env):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    try:
        importlib.reload(importlib.import_module("idp.settings.base"))
        prod = importlib.reload(importlib.import_module("idp.settings.prod"))
        return prod.CACHES, prod.DATABASES
    finally:
        monkeypatch.undo()
        importlib.reload(importlib.import_module("idp.settings.base"))
        importlib.reload(importlib.import_module("idp.settings.prod"))


@pytest.mark.parametrize("features, disabled, in_database", [
    ("stateless", "", True), ("ciba, stateless", "", True), ("", "", False), ("stateless", "stateless", False)])
def test_production_caches_in_the_database_only_with_the_feature(monkeypatch, features, disabled, in_database):
    cache_settings, databases = _prod_caches(
        monkeypatch, IDP_FEATURES=features, IDP_FEATURES_DISABLED=disabled, IDP_REDIS_URL="redis://127.0.0.1:1/0",
        IDP_DB_URL="postgresql://idp@db1:5432,db2:5433/idp?target_session_attrs=read-write")
    backends = {cache_settings[alias]["BACKEND"] for alias in ("default", "generations")}
    assert backends == ({"idp.db_cache.DatabaseCache"} if in_database else {"idp.cache.RedisCache"})
    assert ("cache" in databases) is in_database
    if in_database:
        assert databases["cache"]["HOST"] == databases["default"]["HOST"] == "db1,db2"


@pytest.mark.parametrize("url, host, port", [
    ("postgresql://idp@db1:5432,db2:5433/idp?target_session_attrs=read-write", "db1,db2", "5432,5433"),
    ("postgresql://idp@db1,db2:5433/idp?target_session_attrs=primary", "db1,db2", ",5433"),
    ("postgresql://idp@[::1]:5432/idp", "::1", "5432"),
    ("postgresql://idp@db/idp", "db", ""),
])
def test_database_url_takes_libpq_host_lists(url, host, port):
    entry = database_from_url(url)
    assert (entry["HOST"], entry["PORT"]) == (host, port)


def test_database_url_keeps_the_options_and_names_a_bad_port(monkeypatch):
    entry = database_from_url("postgresql://idp:s%40cret@db1:5432,db2:5432/idp?target_session_attrs=read-write")
    assert entry["OPTIONS"] == {"target_session_attrs": "read-write"} and entry["PASSWORD"] == "s@cret"
    with pytest.raises(ConfigError, match="IDP_DB_URL: port 'x' is not a number"):
        database_from_url("postgresql://idp@db1:5432,db2:x/idp")
    monkeypatch.setenv("IDP_DB_URL", "postgresql://idp@db1:5432,db2:x/idp")
    assert "IDP_DB_URL: port 'x' is not a number" in _setting_problems()


@pytest.mark.parametrize("query", ["", "?target_session_attrs=any", "?sslmode=require"])
def test_several_database_hosts_need_the_primary_asked_for(monkeypatch, query):
    monkeypatch.setenv("IDP_DB_URL", f"postgresql://idp@db1:5432,db2:5432/idp{query}")
    assert ("IDP_DB_URL: several hosts need ?target_session_attrs=read-write, or a node may connect to a read-only "
            "standby") in _setting_problems()


def test_dev_mode_refuses_the_feature_with_one_line(tmp_path):
    done = subprocess.run([sys.executable, "manage.py", "start_dev"], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, env=base_env(DJANGO_SETTINGS_MODULE="idp.settings.dev",
                                                   IDP_VAR_DIR=str(tmp_path), IDP_FEATURES="stateless"))
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "CommandError: IDP_FEATURES: stateless (several sites on one database) needs production mode (manage.py start)")


@pytest.mark.django_db
def test_lb_check_answers_up_only_with_the_feature(client, settings):
    settings.IDP_FEATURES = ""
    assert client.get("/lb-check").status_code == 404
    settings.IDP_FEATURES = "stateless"
    answer = client.get("/lb-check")
    assert (answer.status_code, answer.content, answer["Content-Type"]) == (200, b"UP", "text/plain; charset=utf-8")
