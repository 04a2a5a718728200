"""Fixtures for the mapper tests: the token endpoint tests' realm (clients ``app``, ``spa``,
``api``, user alice), and a loopback server answering a sector identifier document."""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.oidc.endpoints.conftest import alice, http, realm  # noqa: F401 (fixtures)


class SectorServer:
    """Answers GET with ``self.document`` as JSON and counts the calls."""

    def __init__(self):
        owner = self
        self.document, self.calls = [], 0

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 -- http.server's name
                owner.calls += 1
                body = json.dumps(owner.document).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/sector.json"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def sector(outbound_loopback):
    server = SectorServer()
    yield server
    server.close()
