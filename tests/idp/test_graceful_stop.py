"""A node told to stop (SIGTERM) stops gracefully: readiness goes DOWN at once while the public
port still answers for IDP_SHUTDOWN_DELAY seconds (the load balancer's time to stop sending); then
it accepts no new connection, finishes the request it is in the middle of, and exits."""
import json
import os
import signal
import socket
import time

import pytest
import requests

from .test_modes import base_env, free_port, manage, production_database, wait_for  # noqa: F401

pytestmark = pytest.mark.postgresql
DELAY = 2


def test_readiness_goes_down_first_and_the_request_in_flight_is_finished(production_database, tmp_path):
    http, mgmt = free_port(), free_port()
    env = base_env(
        DJANGO_SETTINGS_MODULE="idp.settings.prod", IDP_HOSTNAME="localhost",
        IDP_BASE_URL=f"http://localhost:{http}", IDP_SECRET_KEY="g" * 50,
        IDP_DB_URL=production_database, IDP_REDIS_URL=os.environ["IDP_TEST_REDIS_URL"],
        IDP_VAR_DIR=str(tmp_path), IDP_SHUTDOWN_DELAY=str(DELAY), IDP_SHUTDOWN_TIMEOUT="10",
    )
    proc = manage("start", "--http-port", str(http), "--management-port", str(mgmt),
                  "--bind", "127.0.0.1", "--workers", "1", env=env)
    ready = f"http://127.0.0.1:{mgmt}/health/ready"
    discovery = f"http://127.0.0.1:{http}/realms/master/.well-known/openid-configuration"
    try:
        wait_for(ready, deadline_s=90, proc=proc)
        body = b"grant_type=client_credentials&client_id=nobody&client_secret=" + b"x" * 40
        in_flight = socket.create_connection(("127.0.0.1", http), timeout=15)
        in_flight.sendall(b"POST /realms/master/protocol/openid-connect/token HTTP/1.1\r\nHost: localhost\r\n"
                          b"Content-Type: application/x-www-form-urlencoded\r\nConnection: close\r\n"
                          + f"Content-Length: {len(body)}\r\n\r\n".encode() + body[:10])
        time.sleep(0.3)
        told = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        down = requests.get(ready, timeout=5)
        assert down.status_code == 503
        assert {"name": "shutdown", "status": "DOWN"} in json.loads(down.text)["checks"]
        assert requests.get(discovery, timeout=5).status_code == 200  # still served during the delay
        while time.monotonic() < told + DELAY + 1:  # the workers have been told to stop
            time.sleep(0.1)
        with pytest.raises(requests.ConnectionError):  # nothing new is accepted
            requests.get(discovery, timeout=5)
        in_flight.sendall(body[10:])  # and the request it is in the middle of is finished
        answer = b""
        while chunk := in_flight.recv(65536):
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 401"), answer[:200]  # the unknown client's answer
        assert proc.wait(15) == 0
        assert time.monotonic() - told < DELAY + 10
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out = proc.stdout.read()
    assert "Traceback" not in out, out


def test_a_request_still_unfinished_after_the_shutdown_timeout_is_cut(production_database, tmp_path):
    http, mgmt = free_port(), free_port()
    env = base_env(
        DJANGO_SETTINGS_MODULE="idp.settings.prod", IDP_HOSTNAME="localhost",
        IDP_BASE_URL=f"http://localhost:{http}", IDP_SECRET_KEY="g" * 50,
        IDP_DB_URL=production_database, IDP_REDIS_URL=os.environ["IDP_TEST_REDIS_URL"],
        IDP_VAR_DIR=str(tmp_path), IDP_SHUTDOWN_DELAY="0.5", IDP_SHUTDOWN_TIMEOUT="2",
        IDP_BODY_READ_TIMEOUT="60",  # the body's own deadline is not what ends it here
    )
    proc = manage("start", "--http-port", str(http), "--management-port", str(mgmt),
                  "--bind", "127.0.0.1", "--workers", "1", env=env)
    try:
        wait_for(f"http://127.0.0.1:{mgmt}/health/ready", deadline_s=90, proc=proc)
        stuck = socket.create_connection(("127.0.0.1", http), timeout=30)
        stuck.sendall(b"POST /realms/master/protocol/openid-connect/token HTTP/1.1\r\nHost: localhost\r\n"
                      b"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\nx")
        time.sleep(0.3)
        told = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(20)
        # The delay, then the timeout: the worker that still held the request was stopped.
        assert time.monotonic() - told < 0.5 + 2 + 3
        assert stuck.recv(1) == b""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
