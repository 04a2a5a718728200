"""Several production nodes on one PostgreSQL: started at the same moment on an empty database,
they all come up (migrations and the bootstrap admin are taken in turn under an advisory lock)."""
import os

import psycopg
import pytest

from .test_modes import base_env, free_port, manage, production_database, stop, wait_for

pytestmark = pytest.mark.postgresql


def test_nodes_started_together_on_an_empty_database_all_come_up(production_database, tmp_path):
    nodes = []
    try:
        for n in range(2):
            http, mgmt = free_port(), free_port()
            env = base_env(
                DJANGO_SETTINGS_MODULE="idp.settings.prod", IDP_HOSTNAME="127.0.0.1",
                IDP_BASE_URL=f"http://127.0.0.1:{http}", IDP_SECRET_KEY="z" * 50,
                IDP_DB_URL=production_database, IDP_REDIS_URL=os.environ["IDP_TEST_REDIS_URL"],
                IDP_VAR_DIR=str(tmp_path / f"node{n}"),
                IDP_BOOTSTRAP_ADMIN_USERNAME="root", IDP_BOOTSTRAP_ADMIN_PASSWORD="root-pass-1",
            )
            (tmp_path / f"node{n}").mkdir()
            nodes.append((mgmt, manage("start", "--http-port", str(http), "--management-port", str(mgmt),
                                       "--bind", "127.0.0.1", "--workers", "1", env=env)))
        for mgmt, proc in nodes:
            ready = wait_for(f"http://127.0.0.1:{mgmt}/health/ready", deadline_s=120, proc=proc)
            assert ready.status_code == 200, ready.text
    finally:
        for _, proc in nodes:
            stop(proc)
    for _, proc in nodes:
        out = proc.stdout.read()
        assert "Traceback" not in out and "IntegrityError" not in out, out
    with psycopg.connect(production_database) as conn:
        admins = conn.execute("SELECT count(*) FROM realms_user u JOIN realms_realm r ON u.realm_id = r.id "
                              "WHERE r.name = 'master' AND u.username = 'root'").fetchone()[0]
        realms = conn.execute("SELECT count(*) FROM realms_realm WHERE name = 'master'").fetchone()[0]
    assert (admins, realms) == (1, 1)
