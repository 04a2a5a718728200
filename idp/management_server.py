"""The management server: /health/live, /health/ready and /metrics on their own port (9000).

It runs as a small threaded HTTP server beside the public server, in the same process, so the
public port never answers these paths (PublicPortGuardMiddleware turns them away there)."""
import json
import logging
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from django.http import HttpResponseNotFound
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

logger = logging.getLogger("idp.management")
MANAGEMENT_PATHS = ("/health", "/metrics")


def database_ready():
    from django.db import connection

    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return True, "UP"
    except Exception as exc:  # any database failure means not ready
        return False, exc.__class__.__name__
    finally:
        # Never keep a connection open in this thread: it lives in Granian's main process,
        # whose open sockets would otherwise be inherited by the workers it forks.
        connection.close()


def http_ready(listener):
    """Whether the public port accepts connections: the management server starts before the
    HTTP workers bind, and ready must not be said before they can be reached."""
    if listener is None:
        return True
    host, port = listener
    host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    try:
        socket.create_connection((host, port), timeout=1).close()
        return True
    except OSError:
        return False


class Handler(BaseHTTPRequestHandler):
    server_version = "idp-management"

    def do_GET(self):
        path = self.path.split("?", 1)[0]
        if path == "/health/live":
            self._json(200, '{"status":"UP"}')
        elif path in ("/health/ready", "/health"):
            ok, detail = database_ready()
            checks = [{"name": "database", "status": "UP"} if ok
                      else {"name": "database", "status": "DOWN", "error": detail}]
            if not http_ready(self.server.http_listener):
                ok = False
                checks.append({"name": "http", "status": "DOWN"})
            self._json(200 if ok else 503, json.dumps({"status": "UP" if ok else "DOWN", "checks": checks},
                                                      separators=(",", ":")))
        elif path == "/metrics":
            payload = generate_latest()
            self.send_response(200)
            self.send_header("Content-Type", CONTENT_TYPE_LATEST)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        else:
            self._json(404, '{"error":"not_found"}')

    def _json(self, status, body):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, fmt, *args):
        logger.debug(fmt, *args)


def start_management_server(host, port, http_listener=None):
    """Serve in a daemon thread; returns the server (call .shutdown() to stop). ``http_listener``
    (host, port) is the public port that /health/ready also checks."""
    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    server.http_listener = http_listener
    threading.Thread(target=server.serve_forever, name="management-server", daemon=True).start()
    logger.info("management server on http://%s:%s (health, metrics)", host, port)
    return server


class PublicPortGuardMiddleware:
    """Health and metrics belong to the management port; the public port answers 404."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path.startswith(MANAGEMENT_PATHS):
            return HttpResponseNotFound()
        return self.get_response(request)
