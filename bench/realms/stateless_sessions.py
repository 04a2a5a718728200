"""What the SSO session copy cost under the feature ``stateless`` (decision 0109): password grants
(a sign-in: a session written) and refresh grants (a session read) through the whole middleware
stack, in-process with Django's test client, production settings with ``stateless`` (every cache in
a PostgreSQL table). "copy" is the code before 0109 (a session copied into the cache table beside
its row: the feature switched off for sessions alone, the caches staying in the database); "row"
is the code since (the row alone). Rounds alternate which goes first; medians of microseconds per
grant and database round trips per grant (both connections: the request's and the cache's).

    (source scripts/services.sh && services_start >/dev/null &&
     .venv/bin/python bench/realms/stateless_sessions.py [--rounds 7 --signins 20 --refreshes 200]; services_stop)
"""
import argparse
import os
import secrets
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.update(DJANGO_SETTINGS_MODULE="idp.settings.prod", IDP_FEATURES="stateless", IDP_HOSTNAME="localhost",
                  IDP_DB_URL=os.environ["IDP_TEST_DB_URL"], IDP_REDIS_URL=os.environ["IDP_TEST_REDIS_URL"],
                  IDP_SECRET_KEY=secrets.token_urlsafe(50))
TOKEN = "/realms/bench/protocol/openid-connect/token"
BASIC = "Basic YXBwOmFwcC1zZWNyZXQtMQ=="  # app:app-secret-1


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--signins", type=int, default=20)
    parser.add_argument("--refreshes", type=int, default=200)
    args = parser.parse_args()

    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connections
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from realms.representation.importer import import_realm

    call_command("createcachetable", verbosity=0)  # before migrate, as ``manage.py start``
    call_command("migrate", verbosity=0)
    import_realm({"realm": "bench", "enabled": True, "sslRequired": "none",
                  "clients": [{"clientId": "app", "secret": "app-secret-1", "directAccessGrantsEnabled": True}],
                  "users": [{"username": "u", "enabled": True, "email": "u@example.org", "emailVerified": True,
                             "firstName": "B", "lastName": "U",
                             "credentials": [{"type": "password", "value": "bench-password-1"}]}]},
                 override=True)
    client = Client(HTTP_HOST="localhost")

    def grant(data):
        answer = client.post(TOKEN, data, HTTP_AUTHORIZATION=BASIC)
        assert answer.status_code == 200, answer.content
        return answer.json()

    def measure(mode, n, make):
        settings.IDP_FEATURES = "stateless" if mode == "row" else ""
        with CaptureQueriesContext(connections["default"]) as main, CaptureQueriesContext(connections["cache"]) as side:
            started = time.perf_counter()
            for _ in range(n):
                make()
            spent = time.perf_counter() - started
        return spent / n * 1e6, (len(main) + len(side)) / n

    password = {"grant_type": "password", "username": "u", "password": "bench-password-1"}
    for mode in ("copy", "row"):  # warm: the realm's configuration, keys, the hasher
        measure(mode, 3, lambda: grant(password))
    figures = {(mode, kind): [] for mode in ("copy", "row") for kind in ("sign-in", "refresh")}
    for round_ in range(args.rounds):
        for mode in ("copy", "row") if round_ % 2 == 0 else ("row", "copy"):
            figures[mode, "sign-in"].append(measure(mode, args.signins, lambda: grant(password)))
            refresh = {"grant_type": "refresh_token", "refresh_token": grant(password)["refresh_token"]}
            figures[mode, "refresh"].append(measure(mode, args.refreshes, lambda r=refresh: grant(r)))
    for kind in ("sign-in", "refresh"):
        copy_us, copy_q = (statistics.median(f[i] for f in figures["copy", kind]) for i in (0, 1))
        row_us, row_q = (statistics.median(f[i] for f in figures["row", kind]) for i in (0, 1))
        print(f"{kind:8} copy {copy_us:8.0f} µs {copy_q:4.1f} round trips | row {row_us:8.0f} µs {row_q:4.1f} "
              f"round trips | row/copy {row_us / copy_us:.3f}")


if __name__ == "__main__":
    main()
