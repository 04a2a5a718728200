"""PostgreSQL's CPU per webhook delivery, statement group by statement group, and what a schema
variant changes in it, measured in one run (decision 0116).

One process plays producer and worker on one connection, without Celery or a receiver: per
event, the outbox's transaction (the message and a delivery per endpoint), the claim
(``delivery._claim``), then the results written as the worker's writer writes them, in flushes
of ``--flush`` (``delivery.record``, every attempt a 200). The CPU of that connection's backend
is read from /proc around each step; the rest of this PostgreSQL (autovacuum, the WAL writer)
over each block. Variants are schema changes applied and undone between blocks, which
alternate, so that every variant meets the tables at the same size.
Run through bench/webhooks/pg_cost.sh (starts the services)."""
import argparse
import json
import os
import platform
import statistics
import sys
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.webhooks.settings")

from django.db import connection, transaction  # noqa: E402
from django.utils import timezone  # noqa: E402

from bench.proc import cpu_seconds  # noqa: E402
from bench.webhooks.run import add_history, server_cpu_seconds  # noqa: E402 (sets Django up)
from realms.audit.events import emit  # noqa: E402
from realms.models import Realm  # noqa: E402
from webhooks import delivery, services  # noqa: E402

STEPS = ("event", "claim", "record")


def _constraints(table):
    """{name: definition} of the foreign keys of ``table``."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
                       "WHERE conrelid = %s::regclass AND contype = 'f'", [table])
        return dict(cursor.fetchall())


def _without_foreign_keys(*tables):
    saved = [(table, name, definition) for table in tables for name, definition in _constraints(table).items()]

    def apply():
        with connection.cursor() as cursor:
            for table, name, _ in saved:
                cursor.execute(f"ALTER TABLE {table} DROP CONSTRAINT {name}")

    def undo():
        with connection.cursor() as cursor:
            for table, name, definition in saved:
                cursor.execute(f"ALTER TABLE {table} ADD CONSTRAINT {name} {definition}")
    return apply, undo


def _sql(do, undo):
    def run(sql):
        def go():
            with connection.cursor() as cursor:
                cursor.execute(sql)
        return go
    return run(do), run(undo)


VARIANTS = {
    "base": lambda: (lambda: None, lambda: None),
    "attempts without foreign keys": lambda: _without_foreign_keys("webhooks_deliveryattempt"),
    "deliveries without foreign keys": lambda: _without_foreign_keys("webhooks_delivery"),
    "no foreign keys": lambda: _without_foreign_keys("webhooks_delivery", "webhooks_deliveryattempt"),
    "delivery fillfactor 70": lambda: _sql("ALTER TABLE webhooks_delivery SET (fillfactor = 70)",
                                           "ALTER TABLE webhooks_delivery RESET (fillfactor)"),
}


def _updates():
    """(updates, HOT updates) of the deliveries so far, this connection's counts flushed first, and
    the WAL's position (bytes): deterministic beside the CPU figures."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_force_next_flush()")
    with connection.cursor() as cursor:
        cursor.execute("SELECT n_tup_upd, n_tup_hot_upd, pg_current_wal_lsn() - '0/0' FROM pg_stat_user_tables "
                       "WHERE relname = 'webhooks_delivery'")
        return cursor.fetchone()


def block(realm, events, flush, backend):
    """``events`` events through the three steps: {step: backend CPU seconds}, the rest of PostgreSQL's
    CPU seconds, the deliveries made, the share of their updates that were HOT and the WAL bytes written."""
    spent = dict.fromkeys(STEPS, 0.0)
    made = []
    delivery.hand_off = lambda deliveries, endpoints: made.append([d.pk for d in deliveries])
    updates0 = _updates()
    pg0 = server_cpu_seconds()[0]
    own0 = cpu_seconds(backend)
    n = 0
    for i in range(events):
        t = cpu_seconds(backend)
        with transaction.atomic():
            emit(realm, "LOGIN", user_id=f"u{i}", client_id="bench", ip_address="127.0.0.1")
        t1 = cpu_seconds(backend)
        jobs = delivery._claim(made.pop(), timezone.now())
        t2 = cpu_seconds(backend)
        now = timezone.now()
        results = [delivery.Result(job, now, 5, 200, "", b"", None, False) for job in jobs]
        for k in range(0, len(results), flush):
            delivery.record(results[k:k + flush])
        t3 = cpu_seconds(backend)
        spent["event"] += t1 - t
        spent["claim"] += t2 - t1
        spent["record"] += t3 - t2
        n += len(jobs)
    rest = server_cpu_seconds()[0] - pg0 - (cpu_seconds(backend) - own0)
    updates = [b - a for a, b in zip(updates0, _updates())]
    return spent, rest, n, updates[1] / max(updates[0], 1), int(updates[2])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--endpoints", type=int, default=20)
    ap.add_argument("--events", type=int, default=100, help="events per block")
    ap.add_argument("--blocks", type=int, default=4, help="blocks per variant, the variants alternating")
    ap.add_argument("--flush", type=int, default=10, help="results per write (the writer's flush)")
    ap.add_argument("--history", type=int, default=100000)
    ap.add_argument("--variants", default="base,attempts without foreign keys")
    args = ap.parse_args()
    Realm.objects.filter(name__in=["bench", "bench-history"]).delete()
    add_history(args.history)
    realm = Realm.objects.create(name="bench")
    for i in range(args.endpoints):
        services.create_endpoint(realm, f"http://127.0.0.1:9/ok/{i}", ["auth.*"], max_concurrency=100)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE webhooks_delivery, webhooks_deliveryattempt, webhooks_message")
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]
    names = args.variants.split(",")
    block(realm, 20, args.flush, backend)  # warm: plans, signers, caches
    figures = {name: [] for name in names}
    for b in range(args.blocks):
        for name in names if b % 2 == 0 else names[::-1]:
            apply, undo = VARIANTS[name]()
            apply()
            try:
                spent, rest, n, hot, wal = block(realm, args.events, args.flush, backend)
            finally:
                undo()
            figures[name].append({**{k: v / n * 1e6 for k, v in spent.items()}, "rest": rest / n * 1e6})
            print(json.dumps({"block": b, "variant": name, "deliveries": n, "hot_updates": round(hot, 3),
                              "wal_bytes_per_delivery": round(wal / n),
                              "us_per_delivery": {k: round(v) for k, v in figures[name][-1].items()},
                              "load_average": os.getloadavg()[0]}), file=sys.stderr, flush=True)
    medians = {name: {k: round(statistics.median(f[k] for f in rows)) for k in (*STEPS, "rest")}
               for name, rows in figures.items()}
    for m in medians.values():
        m["total"] = sum(m.values())
    print(json.dumps({"machine": f"{platform.machine()}, {os.cpu_count()} cores",
                      "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "args": vars(args),
                      "median_us_per_delivery": medians, "load_average": os.getloadavg()}, indent=2))
    Realm.objects.filter(name__in=["bench", "bench-history"]).delete()


if __name__ == "__main__":
    main()
