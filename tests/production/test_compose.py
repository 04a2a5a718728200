"""deploy/compose.yaml brought up by Debian's podman-compose as an operator does: PostgreSQL, Redis,
two nodes, a worker, beat and HAProxy on the image the container test builds (the session's
``image`` fixture). Through HAProxy on a free loopback port (``IDP_PUBLISH``): a token issued on
one node is introspected on the other, both nodes serve, the worker runs the purge beat sends
(``IDP_PURGE_INTERVAL``), and ``podman-compose down -v`` removes what ``up`` made.

Podman's flags are the container test's (runc, vfs, a store of the tests' own, explicit limits);
the network backend is netavark, whose aardvark-dns resolves the services' names (CNI without the
dnsname plugin resolves none). Marked postgresql: it runs once, in the PostgreSQL run."""
import re
import secrets
import subprocess
import time
import uuid
from pathlib import Path

import pytest
import requests

from tests.idp.test_modes import free_port
from tests.production.conftest import LIMITS, PODMAN

pytestmark = [pytest.mark.postgresql, pytest.mark.timeout(1800)]
ROOT = Path(__file__).resolve().parents[2]
REALM = "shop"
SECRET = "app-secret-" + "s" * 24
EVENTS_EXPIRATION = 3  # seconds: the event outlives the first look at it, then the purge takes it
PURGE_INTERVAL = 2


class Compose:
    def __init__(self, tmp):
        self.project = f"idpc{uuid.uuid4().hex[:8]}"
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        conf = tmp / "containers.conf"
        conf.write_text('[network]\nnetwork_backend = "netavark"\n')
        self.env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                    "HOME": str(Path.home()), "CONTAINERS_CONF": str(conf),
                    "POSTGRES_PASSWORD": secrets.token_urlsafe(16), "IDP_SECRET_KEY": secrets.token_urlsafe(48),
                    "IDP_PUBLISH": f"127.0.0.1:{self.port}", "IDP_BASE_URL": self.base,
                    "IDP_BOOTSTRAP_ADMIN_USERNAME": "root", "IDP_BOOTSTRAP_ADMIN_PASSWORD": "root-pass-1",
                    "IDP_PURGE_INTERVAL": str(PURGE_INTERVAL)}

    def compose(self, *args, timeout=900):
        done = subprocess.run(
            ["podman-compose", "-p", self.project, "-f", "deploy/compose.yaml", f"--podman-args={' '.join(PODMAN[1:])}",
             f"--podman-run-args={' '.join(LIMITS)}", "--podman-build-args=--network host", *args],
            cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=timeout)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        return done

    def podman(self, *args):
        return subprocess.run([*PODMAN, *args], env=self.env, capture_output=True, text=True, timeout=120)

    def container(self, service):
        return f"{self.project}_{service}_1"

    def logs(self, service):
        done = self.podman("logs", self.container(service))
        return done.stdout + done.stderr

    def management(self, node, path):
        """(status, body) of a node's management port, from inside it (the nodes publish no port)."""
        done = self.podman("exec", self.container(node), "python", "-c",
                           "import urllib.request, urllib.error\ntry:\n"
                           f" r = urllib.request.urlopen('http://127.0.0.1:9000{path}', timeout=10)\n"
                           "except urllib.error.HTTPError as e:\n r = e\n"
                           "print(r.status); print(r.read().decode())")
        status, _, body = done.stdout.partition("\n")
        return (int(status) if done.returncode == 0 else None), body

    def served(self, node, route):
        """Requests to ``route`` a node answered, from its own /metrics."""
        status, metrics = self.management(node, "/metrics")
        assert status == 200, metrics
        return sum(float(n) for n in re.findall(
            rf'http_server_requests_seconds_count{{[^}}]*route="{route}"[^}}]*}} (\S+)', metrics))

    def left(self):
        """What of this project podman still holds: containers, volumes, networks, pods."""
        label = f"label=io.podman.compose.project={self.project}"
        found = []
        for kind in ("ps -a", "volume ls", "network ls", "pod ls"):
            listed = self.podman(*kind.split(), "--filter", label, "--format", "{{.Name}}" if kind != "ps -a"
                                 else "{{.Names}}")
            assert listed.returncode == 0, listed.stderr
            found += [f"{kind.split()[0]} {name}" for name in listed.stdout.split()]
        return found


@pytest.fixture(scope="module")
def stack(image, tmp_path_factory):
    compose = Compose(tmp_path_factory.mktemp("compose"))
    started = time.monotonic()
    try:
        compose.compose("up", "-d")  # builds PostgreSQL's, Redis' and HAProxy's images if missing
        deadline = time.monotonic() + 300
        # The nodes restart until PostgreSQL takes connections, then migrate in turn.
        while any(compose.management(node, "/health/ready")[0] != 200 for node in ("node1", "node2")):
            assert time.monotonic() < deadline, compose.logs("node1")[-3000:] + compose.logs("node2")[-2000:]
            time.sleep(1)
        while True:  # and HAProxy has seen them (rise 2 x 0.5 s)
            try:
                if requests.get(f"{compose.base}/realms/master/.well-known/openid-configuration",
                                timeout=5).status_code == 200:
                    break
            except requests.RequestException:
                pass
            assert time.monotonic() < deadline, compose.logs("haproxy")[-3000:]
            time.sleep(0.5)
        compose.up_s = time.monotonic() - started
        yield compose
    finally:
        downed = time.monotonic()
        compose.compose("down", "-v")
        compose.down_s = time.monotonic() - downed
        left = compose.left()
        # podman-compose 1.0.3 removes containers and volumes but not the networks it made (1.1 does).
        assert set(left) <= {f"network {compose.project}_idp"}, left
        for item in left:
            compose.podman("network", "rm", item.split()[1])
        assert compose.left() == []
        if hasattr(compose, "up_s"):  # else the stack never came up: its own error is the one to read
            print(f"compose: up and ready {compose.up_s:.0f} s, down -v {compose.down_s:.0f} s")


def admin(stack, method, path, body=None):
    token = requests.post(f"{stack.base}/realms/master/protocol/openid-connect/token", timeout=30,
                          data={"grant_type": "password", "client_id": "admin-cli", "username": "root",
                                "password": "root-pass-1"})
    assert token.status_code == 200, token.text
    return requests.request(method, f"{stack.base}/admin/realms{path}", json=body, timeout=30,
                            headers={"Authorization": f"Bearer {token.json()['access_token']}"})


def test_the_compose_file_serves_through_haproxy_on_both_nodes_and_purges(stack):
    created = admin(stack, "post", "", {
        "realm": REALM, "enabled": True, "sslRequired": "none", "eventsEnabled": True,
        "eventsExpiration": EVENTS_EXPIRATION,
        "clients": [{"clientId": "app", "secret": SECRET, "serviceAccountsEnabled": True}]})
    assert created.status_code == 201, created.text
    oidc = f"{stack.base}/realms/{REALM}/protocol/openid-connect"
    issued = requests.post(f"{oidc}/token", timeout=30, data={
        "grant_type": "client_credentials", "client_id": "app", "client_secret": SECRET})
    assert issued.status_code == 200, issued.text
    token = issued.json()["access_token"]
    # Round robin: introspected on both nodes, so on the one that did not issue it.
    deadline = time.monotonic() + 30
    while not (stack.served("node1", "oidc-introspect") and stack.served("node2", "oidc-introspect")):
        assert time.monotonic() < deadline, "one node served every introspection"
        for _ in range(2):
            answer = requests.post(f"{oidc}/token/introspect", timeout=30,
                                   data={"client_id": "app", "client_secret": SECRET, "token": token})
            assert answer.status_code == 200 and answer.json()["active"] is True, answer.text
    assert stack.served("node1", "oidc-token") + stack.served("node2", "oidc-token") >= 1

    # The CLIENT_LOGIN event expires after EVENTS_EXPIRATION; beat sends the purge every
    # PURGE_INTERVAL and the worker runs it (nothing else deletes events).
    events = admin(stack, "get", f"/{REALM}/events?type=CLIENT_LOGIN")
    assert events.status_code == 200 and len(events.json()) == 1, events.text
    deadline = time.monotonic() + EVENTS_EXPIRATION + PURGE_INTERVAL + 20
    while admin(stack, "get", f"/{REALM}/events?type=CLIENT_LOGIN").json():
        assert time.monotonic() < deadline, stack.logs("worker")[-3000:]
        time.sleep(0.5)
    assert re.search(r"Task realms\.purge\[[^]]+\] succeeded", stack.logs("worker")), stack.logs("worker")[-3000:]
    assert "Sending due task purges (realms.purge)" in stack.logs("beat")
