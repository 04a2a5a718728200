"""/health/ready says ready only when the public port can be reached as well as the database."""
import socket

import pytest
import requests

from idp.management_server import start_management_server

from .test_modes import free_port


@pytest.mark.django_db
def test_ready_waits_for_the_public_port():
    http_port = free_port()
    management = start_management_server("127.0.0.1", free_port(), ("0.0.0.0", http_port))
    url = f"http://127.0.0.1:{management.server_address[1]}/health/ready"
    try:
        down = requests.get(url, timeout=5)
        assert down.status_code == 503
        assert down.json() == {"status": "DOWN", "checks": [{"name": "database", "status": "UP"},
                                                            {"name": "http", "status": "DOWN"}]}
        with socket.create_server(("127.0.0.1", http_port)):
            up = requests.get(url, timeout=5)
            assert up.status_code == 200 and up.json()["status"] == "UP"
    finally:
        management.shutdown()


def test_a_silent_connection_is_let_go(monkeypatch):
    from idp.management_server import Handler

    monkeypatch.setattr(Handler, "timeout", 0.5)
    management = start_management_server("127.0.0.1", free_port())
    try:
        with socket.create_connection(management.server_address, timeout=5) as silent:
            assert silent.recv(1) == b""  # closed by the server, not by this timeout
    finally:
        management.shutdown()
