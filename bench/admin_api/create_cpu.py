"""CPU and queries of one ``POST /admin/realms/{realm}/users`` with a password, in one process.

The production WSGI application (production settings: PostgreSQL, Redis) is called serially
with no HTTP server in between; ``time.process_time`` around each call, divided by the users
made, is the application's CPU per create. The realm's password hash alone (Argon2id, Keycloak's
parameters) is timed inside each request, so the request's own share is the difference. Each
figure is the best of five rounds (other processes only ever add time). Then the queries one create
sends to PostgreSQL are listed.

Usage: create_cpu.py [--profile] [N]   (env as in run.sh: DJANGO_SETTINGS_MODULE, IDP_DB_URL,
IDP_REDIS_URL, IDP_BASE_URL, IDP_SECRET_KEY)
"""
import cProfile
import io
import json
import os
import pstats
import sys
import time
import uuid
from urllib.parse import urlencode, urlsplit

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "idp.settings.prod")
django.setup()

from django.conf import settings  # noqa: E402
from django.core.handlers.wsgi import WSGIHandler  # noqa: E402
from django.db import connection  # noqa: E402

from bench.libpq_trace import libpq_trace, queries  # noqa: E402
from realms.credentials import password_policy  # noqa: E402
from realms.models import Realm, User  # noqa: E402
from realms.representation.bootstrap import create_admin_user  # noqa: E402
from realms.representation.services import create_realm  # noqa: E402

REALM, ADMIN, PASSWORD = "bench-create", "bench-create-admin", "bench-create-admin-pass-1"
APP = WSGIHandler()
HOST = urlsplit(settings.IDP_BASE_URL).netloc


def call(method, path, body=b"", content_type="", token=""):
    environ = {
        "REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": "", "SERVER_NAME": HOST.split(":")[0],
        "SERVER_PORT": HOST.split(":")[-1] or "80", "HTTP_HOST": HOST, "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1", "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr, "wsgi.version": (1, 0), "wsgi.multithread": False, "wsgi.multiprocess": True,
        "wsgi.run_once": False, "CONTENT_LENGTH": str(len(body)), "CONTENT_TYPE": content_type,
    }
    if token:
        environ["HTTP_AUTHORIZATION"] = "Bearer " + token
    answer = {}
    result = APP(environ, lambda status, headers, exc_info=None: answer.update(status=int(status[:3])))
    try:
        content = b"".join(result)
    finally:
        getattr(result, "close", lambda: None)()
    return answer["status"], content


def admin_token():
    if not User.objects.filter(realm__name="master", username=ADMIN).exists():
        create_admin_user(ADMIN, PASSWORD, temporary=False)
    body = urlencode({"grant_type": "password", "client_id": "admin-cli", "username": ADMIN,
                      "password": PASSWORD}).encode()
    status, content = call("POST", "/realms/master/protocol/openid-connect/token", body,
                           "application/x-www-form-urlencoded")
    assert status == 200, content[:300]
    return json.loads(content)["access_token"]


def create(token):
    body = json.dumps({"username": f"c-{uuid.uuid4().hex[:12]}", "enabled": True, "credentials": [
        {"type": "password", "value": "Created-pass-1", "temporary": False}]}).encode()
    status, content = call("POST", f"/admin/realms/{REALM}/users", body, "application/json", token)
    assert status == 201, content[:300]


class HashMeter:
    """CPU seconds spent in ``password_policy.hash_password`` (wrapped), so that a round tells
    the hash's share of each create from the rest of the request's."""

    def __init__(self):
        self.cpu, hash_password = 0.0, password_policy.hash_password

        def timed(*args):
            started = time.process_time()
            try:
                return hash_password(*args)
            finally:
                self.cpu += time.process_time() - started

        password_policy.hash_password = timed


def best_of(action, n, meter, rounds=5):
    """(CPU seconds per call, of which in the hash), the best of ``rounds`` rounds of ``n``
    calls (other processes only ever add time)."""
    best = None
    for _ in range(rounds):
        meter.cpu, started = 0.0, time.process_time()
        for _ in range(n):
            action()
        spent = ((time.process_time() - started) / n, meter.cpu / n)
        best = spent if best is None or spent[0] - spent[1] < best[0] - best[1] else best
    return best


def main():
    args = sys.argv[1:]
    profile = args[:1] == ["--profile"]
    n = int((args[1:] if profile else args or ["100"])[0])
    Realm.objects.filter(name=REALM).exists() or create_realm(REALM)
    token = admin_token()  # the master realm's 60 s lifespan: rounds stay well within it
    for _ in range(10):  # warm-up: caches, connections
        create(token)
    if profile:
        profiler = cProfile.Profile(time.process_time)  # CPU, not waiting for PostgreSQL
        profiler.runcall(lambda: [create(token) for _ in range(n)])
        pstats.Stats(profiler).sort_stats(os.environ.get("PROFILE_SORT", "tottime")).print_stats(
            int(os.environ.get("PROFILE_LINES", "40")))
        return
    queries = sent_to_postgresql(lambda: create(token))
    per_create, per_hash = best_of(lambda: create(token), n, HashMeter())
    print(f"POST users with a password, in process ({time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}, "
          f"load average {' '.join(open('/proc/loadavg').read().split()[:3])})")
    print(f"CPU per create {per_create * 1000:.2f} ms ({1 / per_create:.0f}/s per core); the password hash "
          f"{per_hash * 1000:.2f} ms; the rest {(per_create - per_hash) * 1000:.2f} ms; "
          f"{len(queries)} queries sent to PostgreSQL (libpq's trace; statements sent together are joined by ;):")
    for sql in queries:
        print("  " + " ; ".join(statement[:100] for statement in sql.split(";\n")))


def sent_to_postgresql(action):
    """The query strings ``action`` sends to PostgreSQL, each one round trip (Django's query log
    also lists a BEGIN and COMMIT it never sent)."""
    connection.ensure_connection()
    with libpq_trace(connection.connection.pgconn) as text:
        action()
        return queries(text())

if __name__ == "__main__":
    main()
