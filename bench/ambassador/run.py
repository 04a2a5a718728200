#!/usr/bin/env python3
"""Ambassador benchmark: direct vs bare forwarder vs ambassador vs HAProxy in front of the same nginx
upstream. The bare forwarder (bare_forwarder.py: uvloop + httptools, no features) is the floor any
Python proxy on this stack pays per request.

Proxy (bare forwarder, ambassador or HAProxy) pinned to CPU 0; nginx and wrk pinned to CPU 1. Reports requests/s
and p50/p99 latency at 1, 10 and 100 connections, the latency each proxy adds over the direct
path, the ambassador's answer time with its breaker open (as wrk sees it and as the proxy's access
log measures it), each proxy's CPU time per request and run-queue wait (from the schedstat of
every thread of the process, so a run on a shared machine says how much of a cell was waiting for
a CPU), and optionally memory over a soak.

With ``--old-tree DIR`` (``OLD_TREE=DIR`` for run.sh: a git worktree of an older commit) that
tree's ambassador runs beside this one, same configuration, in the same rounds, so old and new
are compared in one window. ``--rounds N`` repeats every cell N times (the proxies take turns) and
reports medians.

``--typed`` adds the typed Cython prototype of the call (typed_call.pyx, decision 0114).

    python bench/ambassador/run.py [--duration 10] [--conns 1,10,100] [--rounds 3] [--old-tree DIR] [--typed] [--soak 600]
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable
NGINX_PORT, AMB_PORT, HAP_PORT, AMB_DEAD_PORT, BARE_PORT, OLD_PORT, TYPED_PORT, METRICS_PORT = \
    18080, 18081, 18082, 18083, 18084, 18085, 18086, 18090


def ensure_packages() -> None:
    missing = [p for p, b in (("nginx", "nginx"), ("wrk", "wrk"), ("haproxy", "haproxy")) if not shutil.which(b)
               and not Path(f"/usr/sbin/{b}").exists()]
    if missing:
        print(f"installing {' '.join(missing)} with apt-get", file=sys.stderr)
        subprocess.run(["apt-get", "install", "-y", *missing], check=True, stdout=subprocess.DEVNULL)


def binary(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


def wait_port(port: int, timeout: float = 30) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listening on 127.0.0.1:{port}")


def pinned(cpu: int, cmd: list[str], **kw) -> subprocess.Popen:
    return subprocess.Popen(["taskset", "-c", str(cpu), *cmd], **kw)


def start_nginx(d: Path) -> subprocess.Popen:
    conf = d / "nginx.conf"
    conf.write_text(f"""
worker_processes 1;
daemon off;
pid {d}/nginx.pid;
error_log {d}/nginx-error.log;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  keepalive_requests 1000000;
  keepalive_timeout 120s;
  server {{
    listen 127.0.0.1:{NGINX_PORT} reuseport backlog=4096;
    location / {{ default_type text/plain; return 200 "hello from nginx\\n"; }}
  }}
}}
""")
    p = pinned(1, [binary("nginx"), "-c", str(conf), "-p", str(d)], stderr=subprocess.DEVNULL)
    wait_port(NGINX_PORT)
    return p


def start_ambassador(d: Path, port: int, upstream_port: int, name: str, tree: Path = ROOT,
                     typed: bool = False) -> subprocess.Popen:
    cfg = d / f"{name}.yaml"
    cfg.write_text(f"""
listener: {{address: 127.0.0.1, port: {port}}}
upstreams:
  web:
    instances: ["127.0.0.1:{upstream_port}"]
    balance: least_request
    breaker: {{window: 20, trip_ratio: 0.5, min_calls: 5, open_for: 1h, half_open_probes: 1}}
    pool: {{max_idle: 256}}
routes:
  - match: {{path_prefix: /}}
    upstream: web
    timeout: 5s
    per_try_timeout: 2s
    retry: {{max: 2, on: [connect-failure, reset, timeout, 502, 503, 504], backoff: 25ms..1s}}
retry_budget: {{ratio: 0.2, min_per_second: 10}}
telemetry: {{metrics_port: {METRICS_PORT + port - AMB_PORT}, access_log: {d}/{name}-access.log}}
""")
    cmd = [PY, str(ROOT / "bench" / "ambassador" / "typed_server.py"), str(cfg)] if typed \
        else [PY, "-m", "ambassador", "--config", str(cfg), "--log-level", "WARNING"]
    p = pinned(0, cmd, cwd=tree, env=dict(os.environ, PYTHONPATH=str(tree)))
    wait_port(port)
    return p


def start_bare(port: int, upstream_port: int) -> subprocess.Popen:
    p = pinned(0, [PY, str(ROOT / "bench" / "ambassador" / "bare_forwarder.py"), "--port", str(port),
                   "--upstream", f"127.0.0.1:{upstream_port}"])
    wait_port(port)
    return p


def start_haproxy(d: Path) -> subprocess.Popen:
    conf = d / "haproxy.cfg"
    conf.write_text(f"""
global
  nbthread 1
  maxconn 4000
defaults
  mode http
  timeout connect 1s
  timeout client 30s
  timeout server 2s
  timeout queue 5s
  retries 2
  option redispatch
  retry-on conn-failure empty-response response-timeout 502 503 504
  option http-keep-alive
frontend fe
  bind 127.0.0.1:{HAP_PORT}
  default_backend be
backend be
  balance leastconn
  http-reuse always
  server nginx 127.0.0.1:{NGINX_PORT} maxconn 1000
""")
    p = pinned(0, [binary("haproxy"), "-f", str(conf), "-db"], stdout=subprocess.DEVNULL)
    wait_port(HAP_PORT)
    return p


_UNIT = {"us": 1e-3, "ms": 1.0, "s": 1000.0, "m": 60000.0, "h": 3600000.0}


def schedstat(pid: int) -> tuple[int, int]:
    """Nanoseconds the process ran on a CPU, and waited for one while runnable: every thread counted
    (uvloop's and the interpreter's helper threads too), so no work can hide off the main one."""
    run = wait = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            r, w, _ = (task / "schedstat").read_text().split()
        except OSError:
            continue  # a thread that ended meanwhile
        run += int(r)
        wait += int(w)
    return run, wait


def wrk(port: int, conns: int, duration: int, pid: int | None = None) -> dict:
    before = schedstat(pid) if pid else None
    out = subprocess.run(["taskset", "-c", "1", binary("wrk"), "-t1", f"-c{conns}", f"-d{duration}s", "--latency",
                          f"http://127.0.0.1:{port}/"], capture_output=True, text=True, check=True).stdout
    total = int(re.search(r"(\d+) requests in", out).group(1))
    cpu = {}
    if before is not None:
        after = schedstat(pid)
        # CPU per request does not depend on what else the machine runs; run-queue wait says how
        # long the proxy was ready but not scheduled (other work on the same CPU).
        cpu = {"cpu_us": (after[0] - before[0]) / 1000 / max(total, 1),
               "waited": (after[1] - before[1]) / 1e9 / duration}
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))

    def pct(p):
        m = re.search(rf"^\s+{p}%\s+([\d.]+)(us|ms|s|m|h)$", out, re.M)
        return float(m.group(1)) * _UNIT[m.group(2)] if m else float("nan")  # no answer in the cell
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors = re.search(r"Socket errors: (.*)", out)
    return {"rps": rps, "p50": pct(50), "p99": pct(99), "non2xx": int(non2xx.group(1)) if non2xx else 0,
            "errors": errors.group(1) if errors else "", **cpu}


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--soak", type=int, default=0, help="seconds of load while sampling the proxy's memory")
    ap.add_argument("--conns", default="1,10,100", help="connection counts, comma-separated")
    ap.add_argument("--rounds", type=int, default=1, help="times every cell is run; medians are reported")
    ap.add_argument("--old-tree", type=Path, help="a checkout of an older commit whose ambassador runs beside this one")
    ap.add_argument("--typed", action="store_true",
                    help="the typed Cython prototype of the call (typed_call.pyx, decision 0114) beside the ambassador")
    args = ap.parse_args()
    args.conns = [int(c) for c in args.conns.split(",")]
    ensure_packages()
    d = Path(tempfile.mkdtemp(prefix="ambassador-bench-"))
    procs = []
    try:
        procs.append(start_nginx(d))
        amb = start_ambassador(d, AMB_PORT, NGINX_PORT, "ambassador")
        procs.append(amb)
        bare = start_bare(BARE_PORT, NGINX_PORT)
        procs.append(bare)
        hap = start_haproxy(d)
        procs.append(hap)
        cells = [("direct", NGINX_PORT, None), ("bare", BARE_PORT, bare.pid), ("ambassador", AMB_PORT, amb.pid),
                 ("haproxy", HAP_PORT, hap.pid)]
        if args.old_tree:
            old = start_ambassador(d, OLD_PORT, NGINX_PORT, "ambassador-old", args.old_tree.resolve())
            procs.append(old)
            cells.insert(2, ("old", OLD_PORT, old.pid))
        if args.typed:
            from callpath import typed_call

            typed_call()  # built here, before the server's start is timed
            typed = start_ambassador(d, TYPED_PORT, NGINX_PORT, "typed", typed=True)
            procs.append(typed)
            cells.append(("typed", TYPED_PORT, typed.pid))
        for _, port, _ in cells:
            wrk(port, 10, 1)  # warm up pools and caches
        rounds: dict = {}
        load = [os.getloadavg()[0]]
        for r in range(args.rounds):
            for conns in args.conns:
                # Each round starts with a different proxy, so none always runs right after another.
                for name, port, pid in cells[r % len(cells):] + cells[:r % len(cells)]:
                    cell = wrk(port, conns, args.duration, pid)
                    rounds.setdefault((name, conns), []).append(cell)
                    print(r, name, conns, cell, file=sys.stderr)
        results = {key: {k: statistics.median(c[k] for c in cells_) for k in cells_[0] if k != "errors"}
                   for key, cells_ in rounds.items()}
        # Breaker open: an upstream that refuses connections trips it, then every answer is a fast 503.
        dead = start_ambassador(d, AMB_DEAD_PORT, 1, "ambassador-dead")
        procs.append(dead)
        wrk(AMB_DEAD_PORT, 1, 1)
        breaker = {c: wrk(AMB_DEAD_PORT, c, args.duration) for c in (1, 10)}
        time.sleep(0.2)  # the access log is written every 50 ms
        breaker_own = own_durations(d / "ambassador-dead-access.log")
        load.append(os.getloadavg()[0])
        print("breaker-open", breaker, file=sys.stderr)
        soak = []
        if args.soak:
            loadgen = subprocess.Popen(["taskset", "-c", "1", binary("wrk"), "-t1", "-c10", f"-d{args.soak}s",
                                        f"http://127.0.0.1:{AMB_PORT}/"], stdout=subprocess.DEVNULL)
            start = time.monotonic()
            while loadgen.poll() is None:
                soak.append((round(time.monotonic() - start), rss_kb(amb.pid)))
                time.sleep(min(30, max(1, args.soak / 20)))
            soak.append((round(time.monotonic() - start), rss_kb(amb.pid)))
        report(results, breaker, soak, args, load, breaker_own)
    finally:
        for p in reversed(procs):
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(d, ignore_errors=True)


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def own_durations(log: Path, tail: int = 16 << 20) -> tuple[float, float, int]:
    """p50/p99 of the proxy's own measured durations (ms) over the last lines of an access log:
    the answer time without the load generator's scheduling noise."""
    with log.open("rb") as f:
        f.seek(max(0, log.stat().st_size - tail))
        lines = f.read().splitlines()[1:]
    values = sorted(json.loads(x)["duration_ms"] for x in lines if x)
    return values[len(values) // 2], values[int(len(values) * 0.99)], len(values)


def report(results, breaker, soak, args, load, breaker_own) -> None:
    lines = [f"- Date: {datetime.date.today().isoformat()}",
             f"- Load average (1 min) at start / end of the cells: {load[0]:.2f} / {load[1]:.2f}",
             f"- Machine: {os.cpu_count()} CPUs (`nproc` = {len(os.sched_getaffinity(0))}), {cpu_model()}",
             f"- Command: `python bench/ambassador/run.py --duration {args.duration}"
             + (f" --conns {','.join(map(str, args.conns))}" if args.conns != [1, 10, 100] else "")
             + (f" --rounds {args.rounds}" if args.rounds != 1 else "")
             + (" --old-tree OLD" if args.old_tree else "")  # the path is this machine's, not the run's
             + (" --typed" if args.typed else "")
             + (f" --soak {args.soak}" if args.soak else "") + "`",
             "- Pinning: proxy on CPU 0; nginx (1 worker) and wrk (1 thread) on CPU 1. Bare forwarder: uvloop + "
             "httptools, no features (bench/ambassador/bare_forwarder.py). Ambassador with metrics "
             "and JSON access log on, least_request, breaker, retries 2, per-try 2 s, overall 5 s; HAProxy 1 thread, "
             "same timeouts and retries.", "",
             "| conns | direct req/s | bare req/s | ambassador req/s | haproxy req/s | bare/haproxy | amb/haproxy "
             "| direct p50/p99 ms | bare added p50/p99 ms | amb added p50/p99 ms | haproxy added p50/p99 ms "
             "| bare / amb / haproxy CPU µs per req | amb/haproxy by CPU "
             "| bare / amb / haproxy run-queue wait |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for c in args.conns:
        di, br, am, ha = (results[(n, c)] for n in ("direct", "bare", "ambassador", "haproxy"))

        def added(r, di=di):
            return f"{r['p50'] - di['p50']:.3f} / {r['p99'] - di['p99']:.3f}"
        lines.append(f"| {c} | {di['rps']:.0f} | {br['rps']:.0f} | {am['rps']:.0f} | {ha['rps']:.0f} "
                     f"| {br['rps'] / max(ha['rps'], 1):.0%} | {am['rps'] / max(ha['rps'], 1):.0%} "
                     f"| {di['p50']:.3f} / {di['p99']:.3f} | {added(br)} | {added(am)} | {added(ha)} "
                     f"| {br['cpu_us']:.1f} / {am['cpu_us']:.1f} / {ha['cpu_us']:.1f} "
                     f"| {ha['cpu_us'] / max(am['cpu_us'], 1e-9):.0%} "
                     f"| {br['waited']:.0%} / {am['waited']:.0%} / {ha['waited']:.0%} |")
    lines.append("")
    lines.append("(amb/haproxy by CPU: HAProxy's CPU per request over the ambassador's, the share of HAProxy's "
                 "throughput the ambassador reaches when both are limited by one core.)")
    names = ["bare"] + (["old"] if args.old_tree else []) + ["ambassador", "haproxy"] + (["typed"] if args.typed else [])
    lines += ["", f"CPU per request, every thread of the proxy counted, median of {args.rounds} round(s); requests "
              "per core = 1 s / CPU per request; share of the bare forwarder's requests per core = bare's CPU "
              "per request over the proxy's.", "",
              "| conns | " + " | ".join(f"{n} µs/req" for n in names) + " | "
              + " | ".join(f"{n} req/s per core" for n in names) + " | "
              + " | ".join(f"{n} / bare" for n in names[1:]) + " |",
              "|---:|" + "---:|" * (3 * len(names) - 1)]
    for c in args.conns:
        cpu = [results[(n, c)]["cpu_us"] for n in names]
        lines.append(f"| {c} | " + " | ".join(f"{u:.1f}" for u in cpu) + " | "
                     + " | ".join(f"{1e6 / u:,.0f}" for u in cpu) + " | "
                     + " | ".join(f"{cpu[0] / u:.0%}" for u in cpu[1:]) + " |")
    lines.append("")
    for c, b in breaker.items():
        lines.append(f"- Breaker open, {c} connection(s): {b['rps']:.0f} answers/s, p50 {b['p50']:.3f} ms, "
                     f"p99 {b['p99']:.3f} ms ({b['non2xx']} answers, all 503).")
    lines.append(f"- Breaker open, as the proxy measured it (last {breaker_own[2]} answers of its access log): "
                 f"p50 {breaker_own[0]:.3f} ms, p99 {breaker_own[1]:.3f} ms.")
    if soak:
        lines += ["", "Soak (10 connections), ambassador RSS: "
                  + ", ".join(f"{t}s {kb / 1024:.1f} MiB" for t, kb in soak)]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
