"""Admin REST API at scale, against a running server: each query timed alone (sequential
requests, after a warm-up) with the server's and PostgreSQL's CPU per request, user creation with
passwords, and partialImport of pre-hashed users. Prints one line per measurement.
Usage: measure.py BASE_URL REALM USERS SERVER_PID POSTGRES_PID  (env: ADMIN_USER, ADMIN_PASSWORD)"""
import base64
import hashlib
import json
import os
import sys
import time

import requests

from bench.admin_api.creates import create_users
from bench.proc import tree_cpu

base, realm, users, server_pid, pg_pid = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
api = f"{base}/admin/realms/{realm}"
session = requests.Session()


def token():
    answer = session.post(f"{base}/realms/master/protocol/openid-connect/token", timeout=30, data={
        "grant_type": "password", "client_id": "admin-cli", "username": os.environ["ADMIN_USER"],
        "password": os.environ["ADMIN_PASSWORD"]})
    answer.raise_for_status()
    session.headers["Authorization"] = "Bearer " + answer.json()["access_token"]


def cpu():
    return tree_cpu(server_pid), tree_cpu(pg_pid)


def timed(label, path, check, n=200, warm=20):
    token()  # a fresh access token for each measurement (the master realm's lifespan is short)
    for _ in range(warm):
        session.get(api + path, timeout=30)
    before, times = cpu(), []
    for _ in range(n):
        start = time.perf_counter()
        answer = session.get(api + path, timeout=30)
        times.append((time.perf_counter() - start) * 1000)
        assert answer.status_code == 200, (path, answer.status_code, answer.text[:200])
        check(answer.json())
    after = cpu()
    times.sort()
    p = lambda q: times[min(int(q * n), n - 1)]  # noqa: E731
    print(f"{label}: p50 {p(0.5):.1f} ms, p95 {p(0.95):.1f} ms, p99 {p(0.99):.1f} ms; CPU per request: "
          f"server {(after[0] - before[0]) / n * 1000:.1f} ms, PostgreSQL {(after[1] - before[1]) / n * 1000:.1f} ms",
          flush=True)


token()
last = users - 100
prefix = f"user{users // 2:07d}"[:-1]  # ten users share it
timed("GET users?first=0&max=100", "/users?first=0&max=100", lambda b: len(b) == 100 or sys.exit(b))
timed(f"GET users?first={last}&max=100", f"/users?first={last}&max=100",
      lambda b: (len(b) == 100 and b[-1]["username"] == f"user{users - 1:07d}") or sys.exit(str(b)[:200]))
timed(f"GET users?search={prefix}", f"/users?search={prefix}", lambda b: len(b) == 10 or sys.exit(str(b)[:200]))
email = f"user{users // 3:07d}@bench.test"
timed("GET users?email=<exact>", f"/users?email={email}", lambda b: len(b) == 1 or sys.exit(str(b)[:200]))
timed("GET users?email=<exact>&exact=true", f"/users?email={email}&exact=true",
      lambda b: len(b) == 1 or sys.exit(str(b)[:200]))
timed("GET users/count", "/users/count", lambda b: b == users or sys.exit(str(b)))

# Users created one by one with a password (Argon2id, the realm's hash): 4 clients for 200 users.
CREATES, CLIENTS = 200, 4
token()
before, start = cpu(), time.perf_counter()
create_users(f"{api}/users", session.headers, CREATES, CLIENTS)
wall, after = time.perf_counter() - start, cpu()
server_cpu = (after[0] - before[0]) / CREATES
print(f"POST users with a password ({CREATES}, {CLIENTS} clients): {CREATES / wall:.0f}/s; CPU per user: server "
      f"{server_cpu * 1000:.1f} ms ({1 / server_cpu:.0f}/s per core), PostgreSQL "
      f"{(after[1] - before[1]) / CREATES * 1000:.1f} ms", flush=True)

# partialImport of 100,000 users with pre-hashed (Keycloak pbkdf2-sha256) credentials, in bodies
# under the 10 MB request limit (Keycloak's too).
salt = os.urandom(16)
digest = hashlib.pbkdf2_hmac("sha256", b"imported-pass-1", salt, 27500, 64)
credential = {"type": "password", "createdDate": 1700000000000,
              "secretData": json.dumps({"value": base64.b64encode(digest).decode(),
                                        "salt": base64.b64encode(salt).decode(), "additionalParameters": {}}),
              "credentialData": json.dumps({"hashIterations": 27500, "algorithm": "pbkdf2-sha256",
                                            "additionalParameters": {}})}
IMPORTED, BATCH = 100_000, 10_000
before, start = cpu(), time.perf_counter()
for first in range(0, IMPORTED, BATCH):
    token() if first else None
    body = {"ifResourceExists": "FAIL", "users": [
        {"username": f"imported{i:06d}", "enabled": True, "email": f"imported{i:06d}@bench.test",
         "credentials": [credential]} for i in range(first, first + BATCH)]}
    answer = session.post(f"{api}/partialImport", json=body, timeout=600)
    assert answer.status_code == 200, answer.text[:300]
    assert answer.json()["added"] == BATCH, answer.text[:300]
wall, after = time.perf_counter() - start, cpu()
print(f"partialImport of {IMPORTED} users with pre-hashed credentials ({IMPORTED // BATCH} requests): "
      f"{wall:.1f} s; CPU: server {after[0] - before[0]:.1f} s, PostgreSQL {after[1] - before[1]:.1f} s", flush=True)
