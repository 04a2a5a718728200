"""CPU cost per request of the OpenID Connect endpoints, measured in one process.

Wall-clock throughput on a shared 2-core machine moves with everybody else's load; the CPU time a
request costs hardly does. This script calls the production WSGI application (production
settings: PostgreSQL, Redis) serially, with no HTTP server in between, and divides the CPU time
spent inside the application (``time.process_time`` around each call) by the number of requests.
It also reports the CPU the PostgreSQL backend and the Redis server spent per request (read from
``/proc`` and ``INFO cpu``), since in production those run beside the application. A core's
throughput is about 1 / (CPU seconds per request); the HTTP server's own share (Granian's
parsing and socket writes) is not included here, ``run.sh`` measures it on the real server.
Each figure is the best of three rounds (other processes only ever add time); the instruction
count per request (``perf stat``, when available) is the load-independent cross-check.

Usage: cpu.py [--profile SCENARIO] [N [SCENARIO ...]]   (env as in run.sh: DJANGO_SETTINGS_MODULE,
IDP_DB_URL, IDP_REDIS_URL, IDP_BASE_URL; the realm made by setup_realm.py)
"""
import base64
import cProfile
import functools
import hashlib
import html
import io
import json
import os
import pstats
import secrets
import shutil
import signal
import subprocess
import sys
import time
from http.cookies import SimpleCookie
from urllib.parse import parse_qs, urlencode, urlsplit

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.oidc.settings")
django.setup()

import redis  # noqa: E402
import requests  # noqa: E402
from django.conf import settings  # noqa: E402
from django.core.handlers.wsgi import WSGIHandler  # noqa: E402
from django.db import connection  # noqa: E402

from bench.oidc.codeflow import CSRF, FORM, OPTIONS, signers  # noqa: E402
from bench.oidc.dpop_load import Prover  # noqa: E402
from bench.oidc.users import CLIENT, ES256_REALM, PASSKEY_REALM, PASSWORD, REALM, REDIRECT, SECRET, USER  # noqa: E402
from bench.proc import cpu_seconds  # noqa: E402
from oidc.realm_cache import get_realm  # noqa: E402
from oidc.resource_server import BearerValidator, JWKSCache  # noqa: E402
from realms.models import User  # noqa: E402

BASIC = "Basic " + base64.b64encode(f"{CLIENT}:{SECRET}".encode()).decode()

APP = WSGIHandler()
BASE = settings.IDP_BASE_URL.rstrip("/")
HOST = urlsplit(BASE).netloc
ISSUER = f"{BASE}/realms/{REALM}"
OIDC = f"{ISSUER}/protocol/openid-connect"


class Meter:
    """CPU seconds spent inside the application, and requests made."""

    def __init__(self):
        self.cpu = 0.0
        self.requests = 0


METER = Meter()


class Browser:
    """Calls the WSGI application directly, keeping cookies like a browser."""

    def __init__(self):
        self.cookies = {}

    def call(self, method, url, data=None, headers=None):
        parts = urlsplit(url)
        body = urlencode(data).encode() if data is not None else b""
        environ = {
            "REQUEST_METHOD": method, "PATH_INFO": parts.path, "QUERY_STRING": parts.query,
            "SERVER_NAME": HOST.split(":")[0], "SERVER_PORT": HOST.split(":")[-1], "HTTP_HOST": HOST,
            "SERVER_PROTOCOL": "HTTP/1.1", "REMOTE_ADDR": "127.0.0.1", "wsgi.url_scheme": "http",
            "wsgi.input": io.BytesIO(body), "wsgi.errors": sys.stderr, "wsgi.version": (1, 0),
            "wsgi.multithread": False, "wsgi.multiprocess": True, "wsgi.run_once": False,
            "CONTENT_LENGTH": str(len(body)),
        }
        if data is not None:
            environ["CONTENT_TYPE"] = "application/x-www-form-urlencoded"
        if self.cookies:
            environ["HTTP_COOKIE"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        for name, value in (headers or {}).items():
            environ["HTTP_" + name.upper().replace("-", "_")] = value
        answer = {}

        def start_response(status, response_headers, exc_info=None):
            answer["status"], answer["headers"] = int(status[:3]), response_headers

        started = time.process_time()
        result = APP(environ, start_response)
        try:
            content = b"".join(result)
        finally:
            getattr(result, "close", lambda: None)()
        METER.cpu += time.process_time() - started
        METER.requests += 1
        out_headers = {}
        for name, value in answer["headers"]:
            if name.lower() == "set-cookie":
                for morsel in SimpleCookie(value).values():
                    self.cookies[morsel.key] = morsel.value
            out_headers[name.lower()] = value
        return answer["status"], out_headers, content


class WSGIAdapter(requests.adapters.BaseAdapter):
    """Lets the resource-server helper fetch the JWKS from the in-process application."""

    def send(self, request, **kwargs):
        status, headers, content = Browser().call(request.method, request.url)
        response = requests.Response()
        response.status_code, response._content, response.url, response.request = status, content, request.url, request
        response.headers.update(headers)
        return response

    def close(self):
        pass


def token(data, oidc=OIDC, headers=None):
    status, _, content = Browser().call("POST", f"{oidc}/token", data, {"Authorization": BASIC, **(headers or {})})
    assert status == 200, content[:300]
    return content


def code_flow(kind="password", signer=None):
    """One flow as codeflow.py runs it (``kind``: password, totp or passkey)."""
    browser = Browser()
    oidc = f"{BASE}/realms/{PASSKEY_REALM if kind == 'passkey' else REALM}/protocol/openid-connect"
    verifier = secrets.token_urlsafe(32)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    status, _, page = browser.call("GET", f"{oidc}/auth?" + urlencode({
        "response_type": "code", "client_id": CLIENT, "redirect_uri": REDIRECT, "scope": "openid",
        "state": secrets.token_urlsafe(8), "code_challenge": challenge, "code_challenge_method": "S256"}))
    page = page.decode()
    assert status == 200, page[:300]

    def post(page, data):
        action = html.unescape(FORM.search(page).group(1))
        return browser.call("POST", BASE + action, {"csrfmiddlewaretoken": CSRF.search(page).group(1), **data})

    if kind == "passkey":
        options = json.loads(html.unescape(OPTIONS.search(page).group(1)))
        status, headers, _ = post(page, signer.assertion(options["challenge"], BASE))
    elif kind == "totp":
        username, code = signer.next()
        status, _, otp_page = post(page, {"username": username, "password": PASSWORD})
        assert status == 200, status
        status, headers, _ = post(otp_page.decode(), {"otp": code})
    else:
        status, headers, _ = post(page, {"username": USER, "password": PASSWORD})
    assert status == 302, status
    code = parse_qs(urlsplit(headers["location"]).query)["code"][0]
    token({"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT, "code_verifier": verifier}, oidc)


def scenarios():
    refresh_token = json.loads(token({"grant_type": "password", "username": USER, "password": PASSWORD,
                                      "scope": "openid"}))["refresh_token"]
    es256 = f"{BASE}/realms/{ES256_REALM}/protocol/openid-connect"
    es256_refresh_token = json.loads(token({"grant_type": "password", "username": USER, "password": PASSWORD,
                                            "scope": "openid"}, es256))["refresh_token"]
    access_token = json.loads(token({"grant_type": "client_credentials"}))["access_token"]
    session = requests.Session()
    session.mount(BASE, WSGIAdapter())
    validator = BearerValidator(issuer=ISSUER, audience="demo-api")
    validator.jwks = JWKSCache(validator.jwks.url, session=session)
    validator.validate(access_token)
    from django.contrib.auth.hashers import check_password, make_password

    encoded = make_password(PASSWORD)  # the production hasher: Argon2id at OWASP's minimum
    # The TOTP flows sign in as many users (a code is good once): their roles are cached first,
    # as the one password user's are, so that both flows compare the same work.
    roles = get_realm(REALM)
    for user in User.objects.filter(realm__name=REALM, username__startswith="bench-totp-"):
        roles.user_roles(user)
    prover = Prover()  # DPoP: a fresh proof per request, made before the metered call
    return {
        "argon2id_verify": (lambda: check_password(PASSWORD, encoded), 0),
        "bare_django_view": (lambda: Browser().call("GET", f"{BASE}/bench/bare"), 1),
        "client_credentials": (lambda: token({"grant_type": "client_credentials"}), 1),
        "client_credentials_dpop": (lambda: token({"grant_type": "client_credentials"},
                                                  headers={"DPoP": prover.proof(f"{OIDC}/token")}), 1),
        "refresh_token": (lambda: token({"grant_type": "refresh_token", "refresh_token": refresh_token}), 1),
        "refresh_token_es256": (lambda: token({"grant_type": "refresh_token", "refresh_token": es256_refresh_token},
                                              es256), 1),
        "code_flow": (code_flow, 3),
        "code_flow_totp": (functools.partial(code_flow, "totp", signers("totp", BASE, 1)[0]), 4),
        "code_flow_passkey": (functools.partial(code_flow, "passkey", signers("passkey", BASE, 1)[0]), 3),
        "local_validation": (lambda: validator.validate(access_token), 0),
    }


def _pg_cpu(pid):
    try:
        return cpu_seconds(pid)
    except FileNotFoundError:  # the backend ended: Django reconnected (CONN_MAX_AGE) during a round
        return float("nan")


def _redis_cpu(client):
    info = client.info("cpu")
    return info["used_cpu_user"] + info["used_cpu_sys"]


class Instructions:
    """Instructions this process executes (user and kernel), counted by ``perf stat`` attached to
    it; None where perf is missing or not allowed. Unlike time, a count does not move with the
    machine's load."""

    def __enter__(self):
        self.count, self._perf = None, None
        if shutil.which("perf"):
            self._perf = subprocess.Popen(["perf", "stat", "-x,", "-e", "instructions", "-p", str(os.getpid())],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            time.sleep(0.3)  # attached before the measured loop starts
        return self

    def __exit__(self, *exc):
        if self._perf is not None:
            self._perf.send_signal(signal.SIGINT)
            for line in self._perf.communicate(timeout=10)[1].splitlines():
                value = line.split(",")[0]
                if "instructions" in line and value.isdigit():
                    self.count = int(value)


def measure(name, action, per, n, rounds=3):
    """Best of ``rounds`` (noise from other processes only ever adds time) of n requests."""
    for _ in range(max(n // 10, 3)):  # warm-up: caches, connections
        action()
    with connection.cursor() as cursor:
        cursor.execute("select pg_backend_pid()")
        pg_pid = cursor.fetchone()[0]
    redis_client = redis.Redis.from_url(os.environ["IDP_REDIS_URL"])
    best = None
    for _ in range(rounds):
        METER.cpu, METER.requests = 0.0, 0
        pg0, redis0, cpu0, wall0 = _pg_cpu(pg_pid), _redis_cpu(redis_client), time.process_time(), time.perf_counter()
        for _ in range(n):
            action()
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        app_cpu = METER.cpu if per else cpu  # validation runs in this process, outside the app
        sample = (app_cpu, _pg_cpu(pg_pid) - pg0, _redis_cpu(redis_client) - redis0, wall)
        best = sample if best is None or sample[0] < best[0] else best
    with Instructions() as counted:
        for _ in range(n):
            action()
    app_cpu, pg, rds, wall = best
    unit = "flow" if per > 1 else "op" if not per else "request"
    instructions = f"{counted.count / n / 1e6:6.2f} M instr" if counted.count else "instr n/a"
    print(f"{name:20s} n={n:5d}  app CPU {app_cpu / n * 1e6:7.0f} µs/{unit} ({instructions}) -> {n / app_cpu:7.0f}/s"
          f" per core | PostgreSQL {pg / n * 1e6:5.0f} µs  Redis {rds / n * 1e6:4.0f} µs"
          f" | all three {n / (app_cpu + pg + rds):7.0f}/s | wall {wall / n * 1e6:6.0f} µs", flush=True)


def main():
    args = sys.argv[1:]
    profile = None
    if args[:1] == ["--profile"]:
        profile, args = args[1], args[2:]
    n = int(args[0]) if args else 2000
    found = scenarios()
    if args[1:]:  # only the scenarios named
        found = {name: found[name] for name in args[1:]}
    if profile:
        action, _ = found[profile]
        for _ in range(50):
            action()
        profiler = cProfile.Profile(time.process_time)  # CPU, not the wait for PostgreSQL and Redis
        profiler.runcall(lambda: [action() for _ in range(n)])
        stats = pstats.Stats(profiler).sort_stats(os.environ.get("PROFILE_SORT", "tottime"))
        stats.print_stats(int(os.environ.get("PROFILE_LINES", "30")))
        return
    print(f"CPU per request, in process ({time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}, "
          f"load average {' '.join(open('/proc/loadavg').read().split()[:3])})")
    for name, (action, per) in found.items():
        count = max(n // 20, 20) if name.startswith("code_flow") or name == "argon2id_verify" else \
            n * 5 if not per else n
        measure(name, action, per, count)


if __name__ == "__main__":
    main()
