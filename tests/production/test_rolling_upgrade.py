"""A rolling upgrade (docs/operations/upgrades.md): two nodes of the previous release serve a light load
(client credentials, and refreshes of a session signed in before the upgrade); one is taken out of
rotation and stopped, a node of the current code starts in its place and migrates the shared
database while the other old node serves on, then the old and the new serve side by side, and the
second old node is replaced in turn. No request fails and the session is not lost.

The previous release is the commit before the latest one that added a migration changing columns,
exported from the repository's history (``git archive``) into a temporary directory."""
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import psycopg
import pytest
import requests

from tests.idp.test_modes import base_env, free_port, production_database, stop, wait_for  # noqa: F401

pytestmark = pytest.mark.postgresql
ROOT = Path(__file__).resolve().parents[2]
PUBLIC = "https://id.example.org"
REALM = "shop"
SECRET = "app-secret-" + "s" * 24


def previous_release():
    """The commit before the latest one that added a migration with a column operation that is still
    in the tree (one added and reverted since leaves that release's schema the current one)."""
    log = subprocess.run(
        ["git", "log", "--format=%x00%H", "--name-only", "--diff-filter=A", "-G",
         r"migrations\.(Add|Alter|Remove|Rename)Field", "--", "*/migrations/0*.py"],
        cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for entry in log.split("\0")[1:]:
        commit, *added = entry.split()
        if any((ROOT / path).exists() for path in added):
            return commit + "^"
    raise AssertionError("no migration in the history")


@pytest.fixture(scope="module")
def old_checkout():
    target = Path(tempfile.mkdtemp(prefix="idp-previous-"))
    tar = target / "release.tar"
    subprocess.run(["git", "archive", "-o", str(tar), previous_release()], cwd=ROOT, check=True)
    subprocess.run(["tar", "-xf", str(tar), "-C", str(target)], check=True)
    tar.unlink()
    yield target
    shutil.rmtree(target, ignore_errors=True)


class Node:
    def __init__(self, root, database, var_dir):
        self.root, self.database, self.var_dir = root, database, var_dir
        self.http, self.mgmt, self.proc = free_port(), free_port(), None
        self.oidc = f"http://127.0.0.1:{self.http}/realms/{REALM}/protocol/openid-connect"

    def start(self):
        env = base_env(
            DJANGO_SETTINGS_MODULE="idp.settings.prod", IDP_HOSTNAME="id.example.org", IDP_BASE_URL=PUBLIC,
            IDP_SECRET_KEY="n" * 50, IDP_DB_URL=self.database, IDP_REDIS_URL=os.environ["IDP_TEST_REDIS_URL"],
            IDP_VAR_DIR=str(self.var_dir), IDP_BOOTSTRAP_ADMIN_USERNAME="root",
            IDP_BOOTSTRAP_ADMIN_PASSWORD="root-pass-1",
            # Ahead of the venv's editable install (and of the .pth that imports from it at every
            # start): the release's own packages, not the current checkout's.
            PYTHONPATH=str(self.root),
        )
        self.var_dir.mkdir(exist_ok=True)
        self.proc = subprocess.Popen(
            [sys.executable, "-u", "manage.py", "start", "--http-port", str(self.http), "--management-port",
             str(self.mgmt), "--bind", "127.0.0.1", "--workers", "1"],
            cwd=self.root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        wait_for(f"http://127.0.0.1:{self.mgmt}/health/ready", deadline_s=180, proc=self.proc)
        return self

    def post(self, path, data):
        return requests.post(self.oidc + path, data=data, headers={"Host": "id.example.org"}, timeout=10)


class Load(threading.Thread):
    """Round robin over the nodes in rotation, as a load balancer: a client-credentials grant and a
    refresh of the one session each turn. A node leaves the rotation before it is stopped."""

    def __init__(self, nodes, refresh_token):
        super().__init__(daemon=True)
        self.nodes, self.refresh_token = list(nodes), refresh_token
        self.lock, self.done = threading.Lock(), threading.Event()
        self.answers, self.failures = 0, []

    def remove(self, node):
        with self.lock:  # no request of the load is in flight on ``node`` once this holds
            self.nodes.remove(node)

    def add(self, node):
        with self.lock:
            self.nodes.append(node)

    def run(self):
        turn = 0
        while not self.done.is_set():
            with self.lock:
                node = self.nodes[turn % len(self.nodes)]
                turn += 1
                for data in ({"grant_type": "client_credentials"},
                             {"grant_type": "refresh_token", "refresh_token": self.refresh_token}):
                    try:
                        answer = node.post("/token", {"client_id": "app", "client_secret": SECRET, **data})
                    except requests.RequestException as exc:
                        self.failures.append(f"{node.http}: {exc}")
                        continue
                    self.answers += 1
                    if answer.status_code != 200:
                        self.failures.append(f"{node.http}: {answer.status_code} {answer.text[:200]}")
                    elif data["grant_type"] == "refresh_token":
                        self.refresh_token = answer.json()["refresh_token"]


def applied(database):
    with psycopg.connect(database) as conn:
        return {row for row in conn.execute("SELECT app, name FROM django_migrations")}


def test_one_node_then_the_other_upgraded_under_load(old_checkout, production_database, tmp_path):
    old_a = Node(old_checkout, production_database, tmp_path / "old-a").start()
    nodes = [old_a]
    try:
        nodes.append(Node(old_checkout, production_database, tmp_path / "old-b").start())
        old_b = nodes[1]
        before = applied(production_database)
        admin = requests.post(f"http://127.0.0.1:{old_a.http}/realms/master/protocol/openid-connect/token",
                              headers={"Host": "id.example.org"}, timeout=10, data={
                                  "grant_type": "password", "client_id": "admin-cli", "username": "root",
                                  "password": "root-pass-1"})
        created = requests.post(f"http://127.0.0.1:{old_a.http}/admin/realms", timeout=30, json={
            "realm": REALM, "enabled": True, "sslRequired": "none",
            "clients": [{"clientId": "app", "secret": SECRET, "directAccessGrantsEnabled": True,
                         "serviceAccountsEnabled": True}],
            "users": [{"username": "ann", "enabled": True, "email": "ann@example.org", "emailVerified": True,
                       "firstName": "Ann", "lastName": "Lee",
                       "credentials": [{"type": "password", "value": "ann-pass-1234"}]}]},
            headers={"Authorization": f"Bearer {admin.json()['access_token']}", "Host": "id.example.org"})
        assert created.status_code == 201, created.text
        signed_in = old_b.post("/token", {"client_id": "app", "client_secret": SECRET, "grant_type": "password",
                                          "username": "ann", "password": "ann-pass-1234"})
        assert signed_in.status_code == 200, signed_in.text

        load = Load(nodes, signed_in.json()["refresh_token"])
        load.start()
        for old in (old_a, old_b):
            load.remove(old)
            stop(old.proc)
            # The current code: its start migrates the database while the other node serves.
            new = Node(ROOT, production_database, old.var_dir.with_name(old.var_dir.name + "-new")).start()
            nodes.append(new)
            load.add(new)
            served = load.answers
            while load.answers < served + 40 and load.is_alive():
                load.done.wait(0.05)  # the old and the new side by side for a while
        load.done.set()
        load.join(30)
        assert load.failures == [], load.failures[:5]
        assert load.answers > 100
        after = applied(production_database)
        assert after > before, "the current code applied no migration: no schema changed in between"
        # The session signed in on the previous release goes on on the current one.
        final = nodes[-1].post("/token", {"client_id": "app", "client_secret": SECRET,
                                          "grant_type": "refresh_token", "refresh_token": load.refresh_token})
        assert final.status_code == 200, final.text
    finally:
        for node in nodes:
            if node.proc is not None and node.proc.poll() is None:
                stop(node.proc)
