"""How long one full cycle collection stops a production web worker, with the objects its start
left behind in the collector's sight and frozen (``idp.heap.freeze_startup_objects``, decision
0055). Loads the application as Granian's worker does (``idp.buffered_wsgi.django_application``,
which freezes), then serves ``N`` requests in process (the master realm's OpenID discovery
document, through ``create_cpu.call``), and times full collections: with the startup objects
frozen (as the worker runs), then unfrozen again. Pin it to a core:
``taskset -c 0 python bench/gc_pause.py [N]``   (env as bench/admin_api/run.sh: production
settings, IDP_DB_URL, IDP_REDIS_URL)
"""
import gc
import statistics
import sys
import time

from bench.admin_api.create_cpu import call  # sets Django up (production settings by default)


def serve(n):
    for _ in range(n):
        status, _ = call("GET", "/realms/master/.well-known/openid-configuration")
        assert status == 200, status


def full_collections(rounds=7):
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        gc.collect()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main():
    from idp.buffered_wsgi import django_application

    app = django_application(threads=1, body_read_timeout=5)
    frozen = gc.get_freeze_count()
    serve(int((sys.argv[1:] or ["200"])[0]))
    frozen_ms, left = full_collections(), len(gc.get_objects())  # as the worker runs
    gc.unfreeze()
    unfrozen_ms, tracked = full_collections(), len(gc.get_objects())
    app.pool.shutdown(wait=False)
    print(f"full collection of a production web worker ({time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}, "
          f"{sys.version.split()[0]}): {frozen:,} objects frozen at start")
    print(f"  startup objects in sight: {tracked:,} objects tracked, median {unfrozen_ms:.1f} ms per full collection")
    print(f"  startup objects frozen:   {left:,} objects tracked, median {frozen_ms:.2f} ms per full collection")


if __name__ == "__main__":
    main()
