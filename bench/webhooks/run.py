"""Webhook delivery benchmark: real PostgreSQL, Redis and Celery workers, a local receiver.

Phase "healthy": realm events at a fixed rate, each fanned out to every endpoint (all answer
200); sustained deliveries/s and commit-to-delivery latency (the event's transaction commits ->
the receiver has the request). Phase "10 % timing out": the same load with 10 % of the endpoints
never answering; the healthy endpoints' p99 is compared with the all-healthy phase of the same
round. ``--rounds`` rounds, the order of the two phases alternating, each phase from the same
state (the tables hold ``--history`` earlier events and none of the benchmark's, endpoints and
Redis reset, statistics fresh); medians are reported. Then receiver signature
verification per core, ours against the standardwebhooks reference library.

``--old-tree PATH`` (run.sh: ``OLD_TREE=PATH``) compares this tree's workers with those of PATH, a
git worktree of an older commit: each round runs the all-healthy phase with either tree's worker,
in alternating order, on the same database, Redis and producer, the webhooks tables migrated to
that tree's last webhooks migration before its phase (this tree's migrations are run backwards
for PATH's phases, so a schema change is measured with the code); read the ratios within a round
on a shared machine. With ``--ordered`` both trees send to ordered
endpoints. ``--ordered`` likewise runs, per round, all-healthy
phases with the endpoints unordered and ordered (decision 0102), in alternating order, the events
cycling over ``--subjects`` users (the subjects whose deliveries go one at a time). CPU is counted
for the worker, this run's PostgreSQL (postmaster, backends, autovacuum) and Redis, and is quoted
per delivery received.

``--side-load N`` serves the project with Granian (``manage.py start``, one worker, pinned to core
0) for the whole run and, during each measured phase, loads it with ``N`` requests/s of the bench
realm's OpenID discovery document (hey, 10 clients, pinned to core 1): the webhook latency on a
machine also running the web server. The web server's answers (rate, p99, errors) are reported
per phase; its CPU is not counted in the CPU per delivery.
Run through bench/webhooks/run.sh (starts the services)."""
import argparse
import json
import os
import platform
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.webhooks.settings")

import django  # noqa: E402

django.setup()

import redis  # noqa: E402
from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402

from bench.proc import cpu_seconds, tree_cpu  # noqa: E402
from realms.audit.events import emit  # noqa: E402
from realms.models import Realm  # noqa: E402
from webhooks import services, signing  # noqa: E402
from webhooks.models import Endpoint, Message  # noqa: E402


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))] if values else float("nan")


def start_workers(n, threads, workdir, tree=REPO):
    procs = []
    env = dict(os.environ, PYTHONPATH=str(tree))
    for i in range(n):
        cmd = [sys.executable, "-m", "celery", "-A", "idp", "worker", "--pool", "threads", "--concurrency", str(threads),
               "--loglevel", "ERROR", "--without-gossip", "--without-mingle", "--without-heartbeat",
               "--prefetch-multiplier", "8", "--hostname", f"bench{i}@%h"]
        if i == 0:
            cmd += ["-B", "--schedule", str(Path(workdir) / "beat")]
        procs.append(subprocess.Popen(cmd, cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                      start_new_session=True))
    return procs


def stop(procs):
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    for p in procs:
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)


def produce(realm, rate, duration, subjects=0):
    """Emit LOGIN events at ``rate``/s, of ``subjects`` users in turn (0: a new one each); returns
    {realm event id: commit time}."""
    commits = {}
    interval = 1.0 / rate
    start = time.monotonic()
    n = 0
    while time.monotonic() - start < duration:
        due = start + n * interval
        pause = due - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        with transaction.atomic():
            event = emit(realm, "LOGIN", user_id=f"u{n % subjects if subjects else n}", client_id="bench",
                         ip_address="127.0.0.1")
            # Registered after the outbox's hook: runs once the commit is done and the tasks are out;
            # the commit time itself is taken by the hook registered first, below.
        commits[event.id] = event._committed_at
        n += 1
    return commits


def _stamp_commit(sender, event, **kwargs):
    transaction.on_commit(lambda: setattr(event, "_committed_at", time.time()))


def server_cpu_seconds():
    """CPU of this run's PostgreSQL (the postmaster, its live backends and autovacuum, and those
    that exited) and Redis (run.sh passes their process ids): only theirs, not the other
    PostgreSQL and Redis servers of a shared machine."""
    return tree_cpu(int(os.environ["PG_PID"])), cpu_seconds(int(os.environ["REDIS_PID"]))


def add_history(n):
    """A running system's tables are not empty: ``n`` delivered events of a realm of their own
    (retention keeps 30 days), so the planner's statistics and choices are those of production.
    On empty tables PostgreSQL plans the foreign-key checks of the outbox and log inserts as
    sequential scans, keeps those plans per connection, and re-reads the growing tables on every
    insert (measured: 30,000 scans reading 24 million rows in one 30 s phase)."""
    realm = Realm.objects.create(name="bench-history")
    endpoint = services.create_endpoint(realm, "https://history.example.com/in", ["auth.*"])[0]
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO webhooks_message (id, realm_id, type, payload, created_at, source_event_id) "
            "SELECT 'msg_history_' || g, %s, 'auth.login', '{}', now() - interval '1 day', '' "
            "FROM generate_series(1, %s) g", [realm.pk, n])
        cursor.execute(
            "INSERT INTO webhooks_delivery (message_id, endpoint_id, state, attempts, step, next_attempt_at, "
            "last_status, last_error, created_at, updated_at) SELECT id, %s, 'delivered', 1, 0, created_at, 200, '', "
            "created_at, created_at FROM webhooks_message WHERE realm_id = %s", [endpoint.pk, realm.pk])
        cursor.execute(
            "INSERT INTO webhooks_deliveryattempt (delivery_id, endpoint_id, message_id, number, started_at, status, "
            "success, duration_ms, response_body, error) SELECT id, endpoint_id, message_id, 1, created_at, 200, true, "
            "5, '', '' FROM webhooks_delivery WHERE endpoint_id = %s", [endpoint.pk])


def reset(realm, endpoints, slow, port):
    """Every phase starts alike: no rows of earlier phases (no dead tuples for autovacuum to chew
    on meanwhile), fresh statistics, endpoints enabled with no slow-down or demotion left over,
    and no slots, flags or queued tasks of the previous phase's worker in Redis."""
    Message.objects.filter(realm=realm).delete()
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE webhooks_delivery, webhooks_deliveryattempt, webhooks_message")
    redis.Redis.from_url(settings.CELERY_BROKER_URL).flushdb()
    for i, ep in enumerate(endpoints):
        kind = "slow" if i in slow else "ok"
        Endpoint.objects.filter(pk=ep.pk).update(
            url=f"http://127.0.0.1:{port}/{kind}/{i}", enabled=True, failing_since=None, throttled_until=None,
            throttle_step=0, slow_until=None)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_web_server():
    """This tree served by Granian on core 0 (as bench/lib.sh's start_server); returns (process, URL
    of the bench realm's discovery document) once it answers."""
    port = free_port()
    proc = subprocess.Popen(
        ["taskset", "-c", "0", sys.executable, "manage.py", "start", "--bind", "127.0.0.1", "--http-port", str(port),
         "--management-port", str(free_port()), "--management-bind", "127.0.0.1", "--workers", "1", "--threads", "4"],
        cwd=REPO, env=dict(os.environ, IDP_BASE_URL=f"http://127.0.0.1:{port}"), stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}/realms/bench/.well-known/openid-configuration"
    for _ in range(120):
        if subprocess.run(["curl", "-fs", "-o", "/dev/null", url]).returncode == 0:
            return proc, url
        time.sleep(0.5)
    stop([proc])
    raise SystemExit("the web server did not answer")


def side_load(url, rate, duration):
    """hey on core 1 at ``rate`` requests/s for ``duration`` seconds (10 clients); a Popen."""
    return subprocess.Popen(["taskset", "-c", "1", "hey", "-z", f"{duration}s", "-c", "10", "-q", str(rate / 10), url],
                            stdout=subprocess.PIPE, text=True)


def side_load_result(proc):
    out = proc.communicate()[0]
    rate = re.search(r"Requests/sec:\s+([\d.]+)", out)
    p99 = re.search(r"99% in ([\d.]+) secs", out)
    codes = dict(re.findall(r"\[(\d+)\]\s+(\d+) responses", out))
    return {"requests_per_s": float(rate.group(1)) if rate else 0.0,
            "p99_ms": round(float(p99.group(1)) * 1000, 1) if p99 else None, "status_codes": codes}


def run_phase(name, realm, endpoints, slow, rate, duration, port, workdir, workers, threads, settle, tree=REPO,
              subjects=0, web=None):
    reset(realm, endpoints, slow, port)
    out = Path(workdir) / f"arrivals-{name}.json"
    receiver = subprocess.Popen([sys.executable, str(Path(__file__).with_name("receiver.py")), str(port), str(out)],
                                stdout=subprocess.PIPE)
    receiver.stdout.readline()
    procs = start_workers(workers, threads, workdir, tree)
    try:
        time.sleep(3)  # workers connect
        # Warm-up at the offered rate, not measured: lane threads, keep-alive connections, caches.
        produce(realm, rate, 2.0, subjects)
        time.sleep(2)
        cpu0 = sum(cpu_seconds(p.pid, children=True) for p in procs)
        pg0, redis0 = server_cpu_seconds()
        print(json.dumps({"measuring": name, "tree": str(tree), "worker_pids": [p.pid for p in procs]}),
              file=sys.stderr, flush=True)
        t0 = time.time()
        hey = side_load(web[0], web[1], duration) if web else None
        commits = produce(realm, rate, duration, subjects)
        produced_for = time.time() - t0
        web_result = side_load_result(hey) if hey else None
        time.sleep(settle)
        worker_cpu = sum(cpu_seconds(p.pid, children=True) for p in procs) - cpu0
        pg1, redis1 = server_cpu_seconds()
        pg_cpu, redis_cpu = pg1 - pg0, redis1 - redis0
    finally:
        receiver.send_signal(signal.SIGTERM)
        receiver.wait(timeout=30)
        stop(procs)
    arrivals = json.loads(out.read_text())
    messages = dict(Message.objects.filter(source_event_id__in=list(commits)).values_list("id", "source_event_id"))
    healthy_paths = {f"/ok/{i}" for i in range(len(endpoints)) if i not in slow}
    latencies, times = [], []
    for msg_id, by_path in arrivals.items():
        event_id = messages.get(msg_id)
        if event_id is None:
            continue
        for path, at in by_path.items():
            if path in healthy_paths:
                latencies.append((at - commits[event_id]) * 1000)
                times.append(at)
    expected = len(commits) * len(healthy_paths)
    window = (max(times) - t0) if times else float("nan")
    received = max(len(latencies), 1)
    return {
        "phase": name, "tree": str(tree), "events": len(commits), "produced_for_s": round(produced_for, 2),
        "web_side_load": web_result,
        "load_average": os.getloadavg()[0],
        "offered_per_s": round(expected / produced_for, 1),
        "healthy_endpoints": len(healthy_paths), "timing_out_endpoints": len(slow),
        "deliveries_expected": expected, "deliveries_received": len(latencies),
        "deliveries_per_s": round(len(latencies) / window, 1) if times else 0,
        "p50_ms": round(pct(latencies, 50), 1), "p99_ms": round(pct(latencies, 99), 1),
        "max_ms": round(max(latencies), 1) if latencies else None,
        "worker_cpu_ms_per_event": round(worker_cpu / len(commits) * 1000, 2),
        "postgres_cpu_ms_per_event": round(pg_cpu / len(commits) * 1000, 2),
        "redis_cpu_ms_per_event": round(redis_cpu / len(commits) * 1000, 2),
        "cpu_ms_per_delivery": {"worker": round(worker_cpu / received * 1000, 3),
                                "postgres": round(pg_cpu / received * 1000, 3),
                                "redis": round(redis_cpu / received * 1000, 3),
                                "total": round((worker_cpu + pg_cpu + redis_cpu) / received * 1000, 3)},
    }


def verify_bench(n=20000):
    import standardwebhooks

    secret = signing.generate_secret()
    body = json.dumps({"type": "auth.login", "timestamp": "2026-01-01T00:00:00Z",
                       "data": {"realm": "bench", "userId": "u" * 36, "clientId": "bench", "ipAddress": "127.0.0.1"}}).encode()
    signer = signing.Signer([secret])
    reqs = [signer.headers(f"msg_{i}", body) for i in range(n)]
    ours = signing.Verifier([secret])
    t = time.perf_counter()
    for h in reqs:
        ours.verify(h["webhook-id"], h["webhook-timestamp"], h["webhook-signature"], body)
    ours_rate = n / (time.perf_counter() - t)
    ref = standardwebhooks.Webhook(secret)
    t = time.perf_counter()
    for h in reqs:
        ref.verify(body, h)
    ref_rate = n / (time.perf_counter() - t)
    return {"ours_per_s": round(ours_rate), "standardwebhooks_per_s": round(ref_rate),
            "ratio": round(ours_rate / ref_rate, 2), "body_bytes": len(body)}


def isolation_rounds(args, realm, endpoints, slow):
    rounds = []
    with tempfile.TemporaryDirectory() as workdir:
        for n in range(args.rounds):
            port = args.port + 2 * n
            # The order alternates (healthy first, then timing-out first, ...) so that neither
            # phase always runs on the warmer or the busier machine.
            order = [("healthy", set()), ("ten_percent_timing_out", slow)]
            phases = {}
            for i, (phase, timing_out) in enumerate(order if n % 2 == 0 else order[::-1]):
                phases[phase] = run_phase(phase, realm, endpoints, timing_out, args.rate, args.duration, port + i,
                                          workdir, args.workers, args.threads, args.settle, web=args.web)
            h, t = phases["healthy"]["p99_ms"], phases["ten_percent_timing_out"]["p99_ms"]
            phases["healthy_p99_change_pct"] = round((t - h) / h * 100, 1)
            print(json.dumps({"round": n + 1, **phases}), file=sys.stderr, flush=True)
            rounds.append(phases)
    results = {"rounds": rounds, "median": {
        phase: {key: statistics.median(r[phase][key] for r in rounds)
                for key in ("deliveries_per_s", "p50_ms", "p99_ms", "worker_cpu_ms_per_event",
                            "postgres_cpu_ms_per_event", "redis_cpu_ms_per_event")}
        for phase in ("healthy", "ten_percent_timing_out")}}
    # Each round's two phases run a minute apart on the same machine; the median of the rounds'
    # changes is the figure to hold against the target, the change of the medians a cross-check.
    results["healthy_p99_change_pct_median_of_rounds"] = statistics.median(r["healthy_p99_change_pct"] for r in rounds)
    h, t = results["median"]["healthy"]["p99_ms"], results["median"]["ten_percent_timing_out"]["p99_ms"]
    results["healthy_p99_change_pct_of_medians"] = round((t - h) / h * 100, 1)
    return results


def _last_migration(tree):
    return max(p.stem for p in (tree / "webhooks" / "migrations").glob("0*.py"))


def compare_trees(args, realm, endpoints):
    """All-healthy phases, this tree's worker against the old tree's, in alternating order; per
    round the new/old ratio of CPU per delivery (worker, PostgreSQL, Redis, all three)."""
    trees = {"new": REPO, "old": Path(args.old_tree).resolve()}
    rounds = []
    with tempfile.TemporaryDirectory() as workdir:
        for n in range(args.rounds):
            phases = {}
            for i, name in enumerate(("new", "old") if n % 2 == 0 else ("old", "new")):
                call_command("migrate", "webhooks", _last_migration(trees[name]), verbosity=0)
                phases[name] = run_phase(f"healthy-{name}", realm, endpoints, set(), args.rate, args.duration,
                                         args.port + 2 * n + i, workdir, args.workers, args.threads, args.settle,
                                         trees[name], subjects=args.subjects, web=args.web)
            phases["new_over_old"] = {
                key: round(phases["new"]["cpu_ms_per_delivery"][key] / phases["old"]["cpu_ms_per_delivery"][key], 3)
                for key in ("worker", "postgres", "redis", "total")}
            print(json.dumps({"round": n + 1, **phases}), file=sys.stderr, flush=True)
            rounds.append(phases)
    return {"rounds": rounds, "median": {
        name: {"cpu_ms_per_delivery": {key: statistics.median(r[name]["cpu_ms_per_delivery"][key] for r in rounds)
                                       for key in ("worker", "postgres", "redis", "total")},
               **{key: statistics.median(r[name][key] for r in rounds)
                  for key in ("deliveries_per_s", "p50_ms", "p99_ms")}}
        for name in ("new", "old")} | {"new_over_old": {
            key: statistics.median(r["new_over_old"][key] for r in rounds)
            for key in ("worker", "postgres", "redis", "total")}}}


def compare_ordered(args, realm, endpoints):
    """All-healthy phases with the endpoints unordered and ordered, in alternating order; per
    round the ordered/unordered ratios of throughput, latency and CPU per delivery."""
    keys = ("deliveries_per_s", "p50_ms", "p99_ms")
    rounds = []
    with tempfile.TemporaryDirectory() as workdir:
        for n in range(args.rounds):
            phases = {}
            for i, name in enumerate(("unordered", "ordered") if n % 2 == 0 else ("ordered", "unordered")):
                Endpoint.objects.filter(realm=realm).update(ordered=name == "ordered")
                phases[name] = run_phase(name, realm, endpoints, set(), args.rate, args.duration, args.port + 2 * n + i,
                                         workdir, args.workers, args.threads, args.settle, subjects=args.subjects,
                                         web=args.web)
            u, o = phases["unordered"], phases["ordered"]
            phases["ordered_over_unordered"] = {
                **{key: round(o[key] / u[key], 3) for key in keys},
                "cpu_ms_per_delivery": round(o["cpu_ms_per_delivery"]["total"] / u["cpu_ms_per_delivery"]["total"], 3)}
            print(json.dumps({"round": n + 1, **phases}), file=sys.stderr, flush=True)
            rounds.append(phases)
    return {"rounds": rounds, "median": {
        name: {**{key: statistics.median(r[name][key] for r in rounds) for key in keys},
               "cpu_ms_per_delivery": statistics.median(r[name]["cpu_ms_per_delivery"]["total"] for r in rounds)}
        for name in ("unordered", "ordered")} | {"ordered_over_unordered": {
            key: statistics.median(r["ordered_over_unordered"][key] for r in rounds)
            for key in (*keys, "cpu_ms_per_delivery")}}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rate", type=float, default=50, help="realm events per second")
    ap.add_argument("--endpoints", type=int, default=20, help="each event goes to every endpoint")
    ap.add_argument("--duration", type=float, default=30, help="seconds measured per phase")
    # One worker process: its sender lanes are threads, so a second process mostly adds GIL
    # and CPU contention on two cores shared with PostgreSQL, Redis, the receiver and the producer.
    ap.add_argument("--workers", type=int, default=1, help="Celery worker processes")
    ap.add_argument("--threads", type=int, default=16, help="Celery threads per worker (they claim batches)")
    ap.add_argument("--concurrency", type=int, default=10, help="max in flight per endpoint (the product default)")
    ap.add_argument("--settle", type=float, default=8)
    ap.add_argument("--rounds", type=int, default=5, help="healthy and timing-out phases alternate this often")
    ap.add_argument("--history", type=int, default=100000, help="delivered events already in the tables")
    ap.add_argument("--port", type=int, default=18765)
    ap.add_argument("--old-tree", help="a worktree of an older commit: its workers against this tree's")
    ap.add_argument("--ordered", action="store_true", help="unordered against ordered endpoints (decision 0102)")
    ap.add_argument("--subjects", type=int, default=0, help="users the events cycle over; 0: a new one per event")
    ap.add_argument("--side-load", type=float, default=0,
                    help="requests/s of OpenID discovery to a Granian web server running beside (0: no web server)")
    args = ap.parse_args()
    from realms.audit.events import realm_event

    realm_event.connect(_stamp_commit, dispatch_uid="bench-commit-time")
    Realm.objects.filter(name__in=["bench", "bench-history"]).delete()
    add_history(args.history)
    realm = Realm.objects.create(name="bench")
    endpoints = [services.create_endpoint(realm, f"http://127.0.0.1:{args.port}/ok/{i}", ["auth.*"],
                                          max_concurrency=args.concurrency)[0] for i in range(args.endpoints)]
    slow = set(range(0, args.endpoints, 10))  # every tenth endpoint: 10 %
    web_server, args.web = None, None
    if args.side_load:
        web_server, url = start_web_server()
        args.web = (url, args.side_load)
    results = {"machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.python_implementation()} "
                          f"{platform.python_version()}",
               "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "args": vars(args)}
    try:
        if args.old_tree:  # with --ordered: both trees with every endpoint ordered
            Endpoint.objects.filter(realm=realm).update(ordered=args.ordered)
            results["ab"] = compare_trees(args, realm, endpoints)
        elif args.ordered:
            results["ordered"] = compare_ordered(args, realm, endpoints)
        else:
            results.update(isolation_rounds(args, realm, endpoints, slow))
    finally:
        if web_server:
            stop([web_server])
    del args.web
    results["verify"] = verify_bench()
    Realm.objects.filter(name__in=["bench", "bench-history"]).delete()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
