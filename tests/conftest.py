import contextlib
import json
import os
from dataclasses import dataclass, field

import pytest
from django.core.cache import cache, caches
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from tests.idp.test_modes import base_env, free_port, manage, stop, wait_for

# The SQLite run (scripts/test.sh, IDP_TEST_DB=sqlite) leaves out the tests below these paths that
# request no database: pytest-django refuses them a query, and the processes these paths start use
# no database or one of their own (servers get ``base_env``, which drops IDP_TEST_DB: start_dev's
# SQLite file, production nodes on a PostgreSQL database of their own), so such a test checks the
# same thing on both runs (decision 0121). A test of these paths that requests the database runs on
# both. A path is added only once the processes its tests start were read for the run's database.
RUN_ONCE = ("tests/ambassador/", "tests/fuzz/", "tests/idp/", "tests/production/", "tests/test_layering.py",
            "tests/test_repository.py", "tests/test_suite_selection.py")


def requests_database(item):
    # Every pytest-django fixture that reaches the test database (db, transactional_db, live_server
    # ...) depends on django_db_setup, which creates it.
    return bool(item.get_closest_marker("django_db") or "django_db_setup" in item.fixturenames)


def pytest_collection_modifyitems(config, items):
    if os.environ.get("IDP_TEST_DB") != "sqlite":
        return
    once = [item for item in items if item.nodeid.startswith(RUN_ONCE) and not requests_database(item)]
    if once:
        config.hook.pytest_deselected(items=once)
        left = set(once)
        items[:] = [item for item in items if item not in left]


@pytest.fixture
def fresh_caches():
    """Tests re-create realms under new ids inside rolled-back transactions (no delete signals):
    the shared cache and the per-process realm configuration are dropped around each one."""
    from realms.data import realm_cache

    cache.clear()
    realm_cache.clear()
    yield
    cache.clear()
    realm_cache.clear()


def once_per_module(django_db_blocker, make):
    """``yield from once_per_module(django_db_blocker, make)`` in a module-scoped fixture: what
    ``make()`` writes is made once for the module's tests, in a transaction rolled back after the
    last one, so nothing of it is committed or left to the next module. Each test's own transaction
    (``db``) is a savepoint inside it; such a module has no ``transactional_db`` test (its flush
    would empty the tables under the open transaction)."""
    from realms.data import realm_cache

    outer = transaction.atomic()
    with django_db_blocker.unblock():
        outer.__enter__()
    try:
        with django_db_blocker.unblock():
            made = make()
        yield made
    finally:
        with django_db_blocker.unblock():
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)
        cache.clear()  # what was cached of the rows is gone with them
        realm_cache.clear()


@pytest.fixture
def outbound_loopback(settings):
    """Production rules of ``realms.http.outbound`` plus the exceptions the loopback test servers need."""
    settings.IDP_OUTBOUND_ALLOW_HTTP = True
    settings.IDP_OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]


@pytest.fixture(scope="session")
def start_dev(tmp_path_factory):
    """One ``manage.py start_dev`` as a developer runs it (its own process, SQLite, local caches)
    for the interop tests of this run: (base URL, ``import_realm(representation, override=False)``,
    which runs ``manage.py import_realm`` beside the running server)."""
    var = tmp_path_factory.mktemp("start-dev")
    env = base_env(DJANGO_SETTINGS_MODULE="idp.settings.dev", IDP_VAR_DIR=str(var),
                   IDP_BOOTSTRAP_ADMIN_USERNAME="boot", IDP_BOOTSTRAP_ADMIN_PASSWORD="boot-pass-1")
    http, mgmt = free_port(), free_port()
    proc = manage("start_dev", "--http-port", str(http), "--management-port", str(mgmt), env=env)

    def import_realm_file(representation, override=False):
        realm_file = var / f"{representation['realm']}.json"
        realm_file.write_text(json.dumps(representation))
        imported = manage("import_realm", str(realm_file), *(["--override"] if override else []), env=env)
        out, _ = imported.communicate(timeout=120)
        assert imported.returncode == 0, out

    try:
        wait_for(f"http://127.0.0.1:{mgmt}/health/ready", proc=proc)  # migrated and serving
        yield f"http://127.0.0.1:{http}", import_realm_file
    finally:
        stop(proc)
        print(proc.stdout.read())  # the server's log, shown by pytest when a test failed


# Every Django cache method that is one round trip to Redis in production.
_CALLS = ("get", "set", "add", "delete", "get_many", "set_many", "delete_many", "incr", "decr", "touch",
          "has_key", "get_or_set")


@dataclass
class Cost:
    queries: list = field(default_factory=list)
    cache_calls: list = field(default_factory=list)

    @property
    def counts(self):
        return len(self.queries), len(self.cache_calls)


@pytest.fixture
def measure(monkeypatch):
    """``with measure() as cost``: the queries and the calls to both shared caches inside (the
    cost model's tests, docs/cost-model.md)."""
    @contextlib.contextmanager
    def run():
        cost = Cost()
        depth = [0]
        for alias in ("default", "generations"):
            backend = caches[alias]
            for name in _CALLS:
                if (alias, name) == ("generations", "get"):
                    # A process checks its copy's generation at most once a second per key
                    # (realms.data.shared_cache), not per request: uncounted, so that a count does
                    # not depend on how long the test took to get there.
                    continue
                real = getattr(backend, name)

                def counted(*args, _real=real, _name=name, _alias=alias, **kwargs):
                    if depth[0] == 0:  # get_or_set calls get and add: one call counted, as sent
                        cost.cache_calls.append(f"{_alias}.{_name}")
                    depth[0] += 1
                    try:
                        return _real(*args, **kwargs)
                    finally:
                        depth[0] -= 1

                monkeypatch.setattr(backend, name, counted)
        with CaptureQueriesContext(connection) as queries:
            yield cost
        # Transaction control is left out: savepoints under the ``db`` fixture, BEGIN and COMMIT
        # under ``transactional_db``.
        cost.queries = [q["sql"] for q in queries.captured_queries
                        if not q["sql"].startswith(("SAVEPOINT", "RELEASE", "BEGIN", "COMMIT"))]
        monkeypatch.undo()

    return run


def assert_costs(found, expected):
    """``found`` (request type: Cost) counts ``expected`` (request type: (queries, cache calls));
    on a difference, the statements and calls of every request type are shown."""
    assert {name: cost.counts for name, cost in found.items()} == expected, {
        name: (cost.queries, cost.cache_calls) for name, cost in found.items()}
