"""One fresh process of the in-process grants (bench/oidc/cpu.py's WSGI calls on the bench realm),
run batch by batch on command so that several processes can be loaded in turn (interleave.py).

Reads lines ``SCENARIO N`` from stdin (scenarios: refresh_token, client_credentials, bare_view),
runs N requests and answers one JSON line: the process's CPU for them (``time.process_time``),
the garbage collector's collections per generation, minor and major page faults and context
switches (``getrusage``) over the batch (instructions per request: bench/oidc/instructions.py).
The application's start is the worker's: built, warmed with one request of each scenario, then its
objects frozen as ``idp.buffered_wsgi.django_application`` does (``STARTS_GC=default`` leaves them
in the collector's sight, ``off`` disables it).

Usage: driver.py   (env as cpu.py: DJANGO_SETTINGS_MODULE, IDP_DB_URL, IDP_REDIS_URL, IDP_BASE_URL)"""
import gc
import json
import os
import resource
import sys
import time

from bench.oidc import cpu  # django.setup(), the WSGI application and its token calls
from bench.oidc.users import PASSWORD, USER
from idp.heap import freeze_startup_objects


def main():
    refresh_token = json.loads(cpu.token({"grant_type": "password", "username": USER, "password": PASSWORD,
                                          "scope": "openid"}))["refresh_token"]
    actions = {
        "refresh_token": lambda: cpu.token({"grant_type": "refresh_token", "refresh_token": refresh_token}),
        "client_credentials": lambda: cpu.token({"grant_type": "client_credentials"}),
        "bare_view": lambda: cpu.Browser().call("GET", f"{cpu.BASE}/bench/bare"),
    }
    for action in actions.values():
        action()
    mode = os.environ.get("STARTS_GC", "freeze")
    if mode == "freeze":
        freeze_startup_objects()
    elif mode == "off":
        gc.disable()
    print(json.dumps({"pid": os.getpid(), "ready": True}), flush=True)
    for line in sys.stdin:
        name, n = line.split()
        action, n = actions[name], int(n)
        gc0 = [s["collections"] for s in gc.get_stats()]
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        started = time.process_time()
        for _ in range(n):
            action()
        cpu_s = time.process_time() - started
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        print(json.dumps({
            "scenario": name, "n": n, "cpu_us": cpu_s / n * 1e6,
            "gc": [s["collections"] - c for s, c in zip(gc.get_stats(), gc0)],
            "minflt": r1.ru_minflt - r0.ru_minflt, "majflt": r1.ru_majflt - r0.ru_majflt,
            "nvcsw": r1.ru_nvcsw - r0.ru_nvcsw, "nivcsw": r1.ru_nivcsw - r0.ru_nivcsw,
        }), flush=True)


if __name__ == "__main__":
    main()
