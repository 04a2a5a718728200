"""Two production nodes behind HAProxy, as docs/operations/haproxy.cfg puts them, on a PostgreSQL
and a Redis of their own (the faults stop and restart them), and a load generator that records
every answer. Everything listens on loopback free ports."""
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import requests

from tests.idp.test_modes import free_port
from tests.production.conftest import PG_BIN, PostgresServer, ProductionNode, RedisServer, _as_postgres

ROOT = Path(__file__).resolve().parents[2]
HAPROXY_EXAMPLE = ROOT / "docs" / "operations" / "haproxy.cfg"
REALM = "shop"
SECRET = "app-secret-" + "s" * 24
PASSWORD = "ann-pass-1234"
# HAProxy's inter x fall is 0.5 s x 2 in the example: the delay must exceed it.
SHUTDOWN_DELAY = 2


class Database(PostgresServer):
    """A PostgreSQL of its own: the restart fault stops the server, not a database in a shared one."""

    def init(self):
        _as_postgres(f"{PG_BIN}/initdb", "-D", str(self.data), "-U", "idp", "--auth=trust", "-E", "UTF8",
                     "--locale=C.UTF-8")
        self.configure(listen_addresses="'127.0.0.1'", port=self.port, unix_socket_directories=f"'{self.dir}'",
                       fsync="off", full_page_writes="off", max_connections=100)
        self.start()

    def stop_fast(self):
        """``pg_ctl stop -m fast``: sessions are ended with a message, as in a planned restart."""
        _as_postgres(f"{PG_BIN}/pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")


class Redis(RedisServer):
    def restart(self):
        """Killed (SIGKILL) if running, then started again on the same port, empty."""
        self.kill()
        self.proc = subprocess.Popen(self.proc.args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16) == b"+PONG\r\n":
                        return
            except OSError:
                pass
            assert time.monotonic() < deadline, "redis-server did not restart"
            time.sleep(0.05)


class Node(ProductionNode):
    @property
    def name(self):
        """HAProxy's name for it (its var directory's)."""
        return self.var_dir.name

    def stop(self):
        """SIGTERM, as an orchestrator stops a node: graceful (readiness down, delay, drain)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            assert self.proc.wait(SHUTDOWN_DELAY + 15) == 0, self.log()[-2000:]
        self.proc = None

    def served(self, path):
        """How many requests for ``path`` this node's access log has (Granian's, one line each)."""
        return sum(1 for line in self.log().splitlines() if f" {path} " in line)


class Cluster:
    def __init__(self, root):
        self.root = Path(root)
        self.db = Database(self.root, "pg")
        self.redis = Redis(self.root)
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.oidc = f"{self.base}/realms/{REALM}/protocol/openid-connect"
        env = dict(
            IDP_HOSTNAME="127.0.0.1", IDP_BASE_URL=self.base, IDP_SECRET_KEY="c" * 50,
            IDP_DB_URL=self.db.url, IDP_REDIS_URL=self.redis.url,
            IDP_BOOTSTRAP_ADMIN_USERNAME="root", IDP_BOOTSTRAP_ADMIN_PASSWORD="root-pass-1",
            IDP_ACCESS_LOG="1", IDP_TRUSTED_PROXIES="127.0.0.1", IDP_SHUTDOWN_DELAY=str(SHUTDOWN_DELAY),
        )
        self.nodes = [Node(self.root / name, **env) for name in ("node1", "node2")]
        self.stats = self.root / "haproxy.sock"
        self.haproxy = None

    def start(self):
        self.db.init()
        for node in self.nodes:
            node.start()
        self.start_haproxy()
        self.wait_status("UP", *self.nodes)
        created = self.admin("post", "", {
            "realm": REALM, "enabled": True, "sslRequired": "none", "eventsEnabled": True,
            "clients": [{"clientId": "app", "secret": SECRET, "directAccessGrantsEnabled": True,
                         "serviceAccountsEnabled": True}],
            "users": [{"username": "ann", "enabled": True, "email": "ann@example.org", "emailVerified": True,
                       "firstName": "Ann", "lastName": "Lee",
                       "credentials": [{"type": "password", "value": PASSWORD}]}],
        })
        assert created.status_code == 201, created.text

    def start_haproxy(self):
        # The example file as it is, its "${...}" from the environment; a second file adds only
        # the admin socket the tests read the servers' states from.
        extra = self.root / "stats.cfg"
        extra.write_text(f"global\n    stats socket {self.stats} level admin\n")
        a, b = self.nodes
        env = {**os.environ, "LB_BIND": f"127.0.0.1:{self.port}", "NODE1": f"127.0.0.1:{a.http}",
               "NODE2": f"127.0.0.1:{b.http}", "NODE1_MANAGEMENT_PORT": str(a.mgmt),
               "NODE2_MANAGEMENT_PORT": str(b.mgmt)}
        with open(self.root / "haproxy.log", "ab") as log:
            self.haproxy = subprocess.Popen(["haproxy", "-db", "-f", str(HAPROXY_EXAMPLE), "-f", str(extra)],
                                            env=env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while not self.stats.exists():
            assert self.haproxy.poll() is None and time.monotonic() < deadline, self.haproxy_log()
            time.sleep(0.05)

    def served_by(self, path, send):
        """(the answer of ``send()``, the node that served it), read from the access logs, which a
        node writes once the answer is sent."""
        before = [node.served(path) for node in self.nodes]
        answer = send()
        deadline = time.monotonic() + 3
        while True:
            grown = [node for node, count in zip(self.nodes, before) if node.served(path) > count]
            if grown:
                assert len(grown) == 1, "one request, served by both nodes?"
                return answer, grown[0]
            assert time.monotonic() < deadline, f"{path} in no node's access log"
            time.sleep(0.05)

    def haproxy_log(self):
        return (self.root / "haproxy.log").read_text(errors="replace")

    def status(self, node):
        """HAProxy's view of a node: UP, DOWN, or a transition ("UP 1/2" ...)."""
        with socket.socket(socket.AF_UNIX) as sock:
            sock.connect(str(self.stats))
            sock.sendall(b"show stat\n")
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        lines = answer.decode().splitlines()
        header = lines[0].lstrip("# ").split(",")
        for line in lines[1:]:
            row = dict(zip(header, line.split(",")))
            if row.get("pxname") == "nodes" and row.get("svname") == node.name:
                return row["status"]
        raise AssertionError(f"no server {node.name} in HAProxy's stats")

    def wait_status(self, status, *nodes, deadline_s=30):
        deadline = time.monotonic() + deadline_s
        while any(self.status(node) != status for node in nodes):
            assert time.monotonic() < deadline, f"not {status} in HAProxy: {[self.status(n) for n in nodes]}"
            time.sleep(0.05)

    def stop(self):
        if self.haproxy is not None and self.haproxy.poll() is None:
            self.haproxy.terminate()
            self.haproxy.wait(10)
        for node in self.nodes:
            node.kill()
        self.redis.kill()
        self.db.stop()

    def token(self, session=requests, **data):
        return session.post(f"{self.oidc}/token", data={"client_id": "app", "client_secret": SECRET, **data},
                            timeout=10)

    def sign_in(self, session=requests):
        answer = self.token(session, grant_type="password", username="ann", password=PASSWORD, scope="openid")
        assert answer.status_code == 200, answer.text
        return answer.json()

    def admin(self, method, path, body=None):
        token = requests.post(f"{self.base}/realms/master/protocol/openid-connect/token", timeout=10,
                              data={"grant_type": "password", "client_id": "admin-cli", "username": "root",
                                    "password": "root-pass-1"}).json()["access_token"]
        return requests.request(method, f"{self.base}/admin/realms{path}", json=body, timeout=30,
                                headers={"Authorization": f"Bearer {token}"})


def cluster_fixture(prepare=None):
    """The body of a module-scoped fixture: a started Cluster, stopped at the module's end.
    ``prepare(cluster)`` runs before anything starts (a node's environment changed, say)."""
    root = Path(tempfile.mkdtemp(prefix="idp-lb-"))
    os.chmod(root, 0o755)  # the postgres user enters it
    cluster = Cluster(root)
    try:
        if prepare is not None:
            prepare(cluster)
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)


class Load:
    """``concurrency`` threads sending ``request(session)`` back to back, each on its own kept-alive
    connection to HAProxy, until the block ends; every answer recorded: ``ok`` (2xx) and
    ``failures`` (anything else, or no answer), with the time it came."""

    def __init__(self, request, concurrency=4):
        self.request, self.concurrency = request, concurrency
        self.ok, self.failures, self._stop = [], [], threading.Event()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._run, daemon=True) for _ in range(concurrency)]

    def _run(self):
        session = requests.Session()
        while not self._stop.is_set():
            try:
                answer = self.request(session)
                outcome = None if 200 <= answer.status_code < 300 else f"{answer.status_code} {answer.text[:200]}"
            except requests.RequestException as exc:
                outcome = f"{type(exc).__name__}"
            with self._lock:
                (self.ok if outcome is None else self.failures).append((time.monotonic(), outcome))

    def __enter__(self):
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        for thread in self._threads:
            thread.join(15)

    def ok_since(self, moment):
        with self._lock:
            return [t for t, _ in self.ok if t >= moment]
