"""Issue 11 finding 4: clients that send their request slowly do not stop the production server.

``manage.py start`` runs as a subprocess; 60 connections trickle their headers (one header line a
second, never finishing) or their body, while probes on fresh connections must still be answered
quickly; the server closes the slow connections once its header or body read timeout has passed."""
import os
import socket
import threading
import time

import requests

from .test_modes import base_env, free_port, manage, production_database, stop, wait_for  # noqa: F401

SLOW, PROBES = 60, 10
READ_TIMEOUT = 5  # half the default: the settings are shown to take effect


def trickle(port, stop_event, closed, body=False):
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    try:
        if body:
            sock.sendall(b"POST /realms/master/protocol/openid-connect/token HTTP/1.1\r\nHost: localhost\r\n"
                         b"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100000\r\n\r\n")
        else:
            sock.sendall(b"GET /realms/master/.well-known/openid-configuration HTTP/1.1\r\nHost: localhost\r\n")
        sock.settimeout(1.0)
        while not stop_event.is_set():
            sock.sendall(b"a=b&" if body else b"X-Slow: 1\r\n")
            try:
                if sock.recv(4096) == b"":
                    closed.append(time.monotonic())
                    return
            except TimeoutError:
                pass
            except OSError:
                closed.append(time.monotonic())
                return
    except OSError:
        closed.append(time.monotonic())
    finally:
        sock.close()


def run_against_slow_clients(database, tmp_path, body):
    http, mgmt = free_port(), free_port()
    env = base_env(
        DJANGO_SETTINGS_MODULE="idp.settings.prod", IDP_HOSTNAME="localhost",
        IDP_BASE_URL=f"http://localhost:{http}", IDP_SECRET_KEY="z" * 50,
        IDP_DB_URL=database, IDP_REDIS_URL=os.environ["IDP_TEST_REDIS_URL"],
        IDP_VAR_DIR=str(tmp_path), IDP_HEADER_READ_TIMEOUT=str(READ_TIMEOUT),
        IDP_BODY_READ_TIMEOUT=str(READ_TIMEOUT),
    )
    proc = manage("start", "--http-port", str(http), "--management-port", str(mgmt),
                  "--bind", "127.0.0.1", "--workers", "2", env=env)
    stop_event, closed = threading.Event(), []
    discovery = f"http://127.0.0.1:{http}/realms/master/.well-known/openid-configuration"
    try:
        wait_for(f"http://127.0.0.1:{mgmt}/health/ready", deadline_s=90, proc=proc)
        assert wait_for(discovery, proc=proc).status_code == 200
        started = time.monotonic()
        for _ in range(SLOW):
            threading.Thread(target=trickle, args=(http, stop_event, closed, body), daemon=True).start()
        time.sleep(2)  # every slow connection is open and sending
        slowest = 0.0
        for _ in range(PROBES):
            t0 = time.monotonic()
            assert requests.get(discovery, timeout=5, headers={"Connection": "close"}).status_code == 200
            slowest = max(slowest, time.monotonic() - t0)
            time.sleep(0.2)
        assert slowest < 2.0, f"a probe took {slowest:.1f}s"
        # Reads are bounded: the trickling connections are closed after the timeout.
        while len(closed) < SLOW and time.monotonic() < started + 20:
            time.sleep(0.5)
        assert len(closed) >= SLOW, f"only {len(closed)} slow connections closed"
        assert max(closed) - started < READ_TIMEOUT + 4, f"closed after {max(closed) - started:.1f}s"
    finally:
        stop_event.set()
        stop(proc)


def test_slow_headers_do_not_starve_the_server(production_database, tmp_path):
    run_against_slow_clients(production_database, tmp_path, body=False)


def test_slow_bodies_do_not_starve_the_server(production_database, tmp_path):
    run_against_slow_clients(production_database, tmp_path, body=True)
