"""The management server: /health/live, /health/started, /health/ready and /metrics on their own
port (9000), Keycloak's: ``{"status": "UP"|"DOWN", "checks": [...]}``, 503 when DOWN.

It runs as a small threaded HTTP server beside the public server, in the same process, so the
public port never answers these paths (PublicPortGuardMiddleware turns them away there)."""
import json
import logging
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from django.conf import settings
from django.http import HttpResponseNotFound
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from idp.metrics import Exposition

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


def redis_ready():
    """(ok, detail) of the site's Redis (IDP_REDIS_URL), or None without one (dev mode). It carries
    the shared caches, Celery's queue and the webhook senders' limits; with the feature ``stateless``
    the caches are in the database, the rest is still there. A client of its own, closed after
    one round trip: nothing open here may be inherited by workers."""
    if not settings.IDP_REDIS_URL:
        return None
    import redis

    client = redis.Redis.from_url(settings.IDP_REDIS_URL, socket_connect_timeout=1, socket_timeout=1)
    try:
        version = client.info("server")["redis_version"]
    except Exception as exc:  # any Redis failure means not ready
        return False, exc.__class__.__name__
    finally:
        client.close()
    return redis_version_ready(version)


def redis_version_ready(version):
    """(ok, detail) of a Redis server's version: webhook deliveries reach the workers through a
    list taken with BLMPOP (decision 0119), which Redis has from 7.0; an older one would take
    none, so it is not ready, in words."""
    major_minor = tuple(int(part) for part in version.split(".")[:2])
    if major_minor < (7, 0):
        return False, f"Redis {version}: 7.0 or later is needed (webhook deliveries use BLMPOP)"
    return True, "UP"


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
    # Each connection has a thread: one that sends nothing, or stops sending, lets it go after this.
    timeout = 10

    def do_GET(self):
        path = self.path.split("?", 1)[0]
        if path == "/health/live":
            self._health([])
        elif path == "/health/started":
            self._health([] if self.server.started.is_set() else [{"name": "started", "status": "DOWN"}])
        elif path in ("/health/ready", "/health"):
            checks = []
            for name, result in (("database", database_ready()), ("redis", redis_ready())):
                if result is not None:
                    ok, detail = result
                    checks.append({"name": name, "status": "UP"} if ok
                                  else {"name": name, "status": "DOWN", "error": detail})
            if self.server.stopping.is_set():  # told to stop: out of the load balancer first
                checks.append({"name": "shutdown", "status": "DOWN"})
            if not self.server.started.is_set():
                checks.append({"name": "started", "status": "DOWN"})
            elif not http_ready(self.server.http_listener):
                checks.append({"name": "http", "status": "DOWN"})
            self._health(checks)
        elif path == "/metrics":
            payload = generate_latest(Exposition())
            self.send_response(200)
            self.send_header("Content-Type", CONTENT_TYPE_LATEST)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        else:
            self._json(404, '{"error":"not_found"}')

    def _health(self, checks):
        up = all(check["status"] == "UP" for check in checks)
        body = {"status": "UP" if up else "DOWN", "checks": checks}
        self._json(200 if up else 503, json.dumps(body, separators=(",", ":")))

    def _json(self, status, body):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, fmt, *args):
        logger.debug(fmt, *args)


class ManagementServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # A load balancer's health check reads the status line and resets the connection:
        # routine, not an error with a traceback on stderr at every check.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        logger.exception("management server: request from %s failed", client_address[0])


def start_management_server(host, port, http_listener=None, started=True):
    """Serve in a daemon thread; returns the server (call .shutdown() to stop). ``http_listener``
    (host, port) is the public port that /health/ready also checks; with ``started=False``
    /health/started and /health/ready say DOWN until ``server.started.set()`` (start-up done)."""
    server = ManagementServer((host, port), Handler)
    server.http_listener = http_listener
    server.started, server.stopping = threading.Event(), threading.Event()
    if started:
        server.started.set()
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
