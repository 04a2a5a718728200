"""Health of a production node as a load balancer and an orchestrator see it: /health/live,
/health/started (start-up done) and /health/ready (database, Redis, public port), Keycloak's
``{"status": ..., "checks": [...]}`` and 503 when down; Redis really stopped and started again."""
import os
import socket
import struct
import subprocess
import time

import pytest
import requests

from .test_modes import base_env, free_port, manage, production_database, stop, wait_for


def redis_server(port):
    return subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no"], stdout=subprocess.DEVNULL)


def ready_is(url, status, deadline_s=15):
    deadline = time.monotonic() + deadline_s
    while True:
        answer = requests.get(url, timeout=5)
        if answer.status_code == status or time.monotonic() > deadline:
            return answer
        time.sleep(0.2)


def check_then_close(port, reset):
    """A health check that sends its request and goes without reading the answer: closed, or
    reset as HAProxy's checks do (SO_LINGER 0)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    if reset:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.sendall(b"GET /health/ready HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    sock.close()


def test_ready_follows_database_and_redis_started_follows_start_up(production_database, tmp_path):
    redis_port, http, mgmt = free_port(), free_port(), free_port()
    redis = redis_server(redis_port)
    env = base_env(
        DJANGO_SETTINGS_MODULE="idp.settings.prod", IDP_HOSTNAME="127.0.0.1",
        IDP_BASE_URL=f"http://127.0.0.1:{http}", IDP_SECRET_KEY="h" * 50,
        IDP_DB_URL=production_database, IDP_REDIS_URL=f"redis://127.0.0.1:{redis_port}/0", IDP_VAR_DIR=str(tmp_path),
    )
    proc = manage("start", "--http-port", str(http), "--management-port", str(mgmt),
                  "--bind", "127.0.0.1", "--workers", "1", env=env)
    base = f"http://127.0.0.1:{mgmt}/health"
    try:
        # The management port is up before the migrations (seconds on an empty database): live,
        # not started yet.
        started = []
        while not started or started[-1] != 200:
            assert proc.poll() is None and len(started) < 600, started
            try:
                started.append(requests.get(f"{base}/started", timeout=5).status_code)
                if len(started) == 1:
                    assert requests.get(f"{base}/live", timeout=5).json() == {"status": "UP", "checks": []}
            except requests.ConnectionError:
                pass
            time.sleep(0.1)
        assert started[0] == 503, started
        ready = wait_for(f"{base}/ready", deadline_s=90, proc=proc)
        assert ready.status_code == 200
        assert ready.json() == {"status": "UP", "checks": [{"name": "database", "status": "UP"},
                                                           {"name": "redis", "status": "UP"}]}

        redis.kill()
        redis.wait()
        down = ready_is(f"{base}/ready", 503)
        assert down.status_code == 503
        assert down.json() == {"status": "DOWN", "checks": [
            {"name": "database", "status": "UP"}, {"name": "redis", "status": "DOWN", "error": "ConnectionError"}]}
        # Only readiness: the node is alive and started, to be taken out of the pool, not restarted.
        assert requests.get(f"{base}/live", timeout=5).status_code == 200
        assert requests.get(f"{base}/started", timeout=5).status_code == 200

        redis = redis_server(redis_port)
        assert ready_is(f"{base}/ready", 200).status_code == 200

        for _ in range(5):
            check_then_close(mgmt, reset=False)
            check_then_close(mgmt, reset=True)
        time.sleep(1)  # the server's threads meet the closed connections
        assert requests.get(f"{base}/live", timeout=5).status_code == 200
    finally:
        stop(proc)
        redis.kill()
        redis.wait()
    log = proc.stdout.read()
    assert not any(word in log for word in ("Traceback", "ConnectionResetError", "BrokenPipeError")), log


@pytest.mark.django_db
def test_started_is_down_until_start_up_is_done():
    """/health/started and /health/ready say DOWN while ``start`` migrates (or waits for another
    node's migrations) and creates the bootstrap admin."""
    from idp.management_server import start_management_server

    server = start_management_server("127.0.0.1", free_port(), started=False)
    base = f"http://127.0.0.1:{server.server_address[1]}/health"
    try:
        assert requests.get(f"{base}/live", timeout=5).status_code == 200
        for path in ("started", "ready"):
            answer = requests.get(f"{base}/{path}", timeout=5)
            assert answer.status_code == 503 and {"name": "started", "status": "DOWN"} in answer.json()["checks"]
        server.started.set()
        assert requests.get(f"{base}/started", timeout=5).json() == {"status": "UP", "checks": []}
    finally:
        server.shutdown()
