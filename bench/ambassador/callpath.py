#!/usr/bin/env python3
"""The ambassador's Python cost per call, without the network: a client connection and a pooled
upstream connection on transports that keep what is written, fed the bytes wrk and nginx send.
What it times is everything the proxy runs per call (parsing, routing, breaker, pool, metrics,
the access-log line and its batched write, the event loop's turns) except the socket system calls
and what they cost the kernel. The loop turns once every 8 calls (wrk at 10 connections hands the
proxy about 8 reads per turn). The machine's load moves it less than a wrk run, so small changes
show.

    python bench/ambassador/callpath.py [--calls 200000] [--rounds 5] [--access-log FILE|null] [--bare|--typed]

PYTHONPATH=TREE measures that tree's ambassador; ``--bare`` the bare forwarder's classes
(bare_forwarder.py) in the same harness, the floor; ``--typed`` the typed Cython prototype of the
same call (typed_call.pyx, decision 0114; needs Cython), after checking that it writes what the
ambassador writes.
"""
from __future__ import annotations

import argparse
import asyncio
import gc
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.environ.get("PYTHONPATH") or str(Path(__file__).resolve().parents[2]))
sys.path.insert(1, str(Path(__file__).resolve().parent))  # bare_forwarder

from ambassador.configfile import build  # noqa: E402
from ambassador.server import App  # noqa: E402
from ambassador.upstream import H1Conn  # noqa: E402

REQUEST = b"GET / HTTP/1.1\r\nHost: 127.0.0.1:18081\r\n\r\n"  # what wrk sends
RESPONSE = (b"HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Sun, 29 Nov 2026 04:40:00 GMT\r\n"
            b"Content-Type: text/plain\r\nContent-Length: 17\r\nConnection: keep-alive\r\n\r\n"
            b"hello from nginx\n")  # what nginx answers


class Transport:
    """Keeps the last write; enough of a transport for the proxy's connections."""

    def __init__(self):
        self.last = b""
        self.writes = 0
        self.closed = False

    def write(self, data):
        self.last = data
        self.writes += 1

    def writelines(self, parts):
        self.write(b"".join(parts))

    def is_closing(self):
        return False

    def pause_reading(self):
        pass

    def resume_reading(self):
        pass

    def close(self):
        self.closed = True

    abort = close


async def timed(feed_client, feed_upstream, calls: int, rounds: int) -> list[float]:
    gc.collect()
    gc.freeze()
    gc.set_threshold(20000, 20, 50)  # as the ambassador's serve() does
    per_call = []
    turn = asyncio.sleep
    for _ in range(rounds):
        start = time.process_time_ns()
        for _ in range(calls // 8):
            for _ in range(8):
                feed_client(REQUEST)
                feed_upstream(RESPONSE)
            await turn(0)
        per_call.append((time.process_time_ns() - start) / (calls // 8 * 8) / 1000)
    await turn(0)
    return per_call


async def measure_bare(calls: int, rounds: int) -> list[float]:
    import bare_forwarder as bare

    pool = bare.Pool(asyncio.get_running_loop(), "127.0.0.1", 18080)
    conn = bare.Upstream(pool)
    conn.connection_made(Transport())
    pool.idle.append(conn)
    client = bare.Client(pool)
    client_t = Transport()
    client.connection_made(client_t)
    per_call = await timed(client.data_received, conn.data_received, calls, rounds)
    assert client_t.last.endswith(b"hello from nginx\n") and client_t.writes == calls // 8 * 8 * rounds
    return per_call


CONFIG = {"listener": {"port": 0},
          "upstreams": {"web": {"instances": ["127.0.0.1:18080"], "balance": "least_request",
                                "breaker": {"window": 20, "trip_ratio": 0.5, "min_calls": 5, "open_for": "1h"},
                                "pool": {"max_idle": 256}}},
          "routes": [{"match": {"path_prefix": "/"}, "upstream": "web", "timeout": "5s",
                      "per_try_timeout": "2s", "retry": {"max": 2, "backoff": "25ms..1s"}}],
          "retry_budget": {"ratio": 0.2, "min_per_second": 10}}


def typed_call():
    """The typed Cython prototype (typed_call.pyx, decision 0114), compiled on first use."""
    try:
        import pyximport
    except ImportError:
        raise SystemExit(f"--typed needs Cython: {sys.executable} -m pip install 'Cython>=3.1,<4'") from None

    pyximport.install(language_level=3)
    import typed_call

    return typed_call


async def ambassador(access_log: str | None, typed: bool):
    """A client connection and a pooled upstream connection of the ambassador (or of the typed
    prototype), on in-memory transports: (client, upstream connection, their transports, close)."""
    app = App(build(CONFIG | {"telemetry": {"access_log": access_log}}, "callpath.yaml", Path(".")))
    await app.start()
    client_t, upstream_t = Transport(), Transport()
    if typed:
        proxy = typed_call().Proxy(app)
        conn = proxy.upstream_connection(0)
        conn.connection_made(upstream_t)
        proxy.pool(conn)
        client = proxy.protocol()
    else:
        up = app.runtime.upstreams["web"]
        inst = up.balancer.instances[0]
        conn = H1Conn(up, inst, 0)
        conn.connection_made(upstream_t)
        inst.idle.append(conn)
        client = app.http.protocol()
        proxy = None
    client.connection_made(client_t)

    def close():
        if proxy is not None:
            proxy.flush_log()
        app.access_log.close()
        app.runtime.close()

    return client, conn, client_t, upstream_t, close


async def check_typed(directory: str) -> None:
    """The prototype writes what the ambassador writes: the same request upstream, the same answer,
    the same access-log lines but for their time and duration."""
    seen = {}
    for typed in (False, True):
        log = Path(directory) / f"check-{typed}.log"
        client, conn, client_t, upstream_t, close = await ambassador(str(log), typed)
        for _ in range(3):
            for _ in range(2):
                client.data_received(REQUEST)
                conn.data_received(RESPONSE)
            await asyncio.sleep(0)
        close()
        lines = [re.sub(rb'"(ts|duration_ms)":[0-9]+\.[0-9]{3},', b"", line) for line in log.read_bytes().splitlines()]
        assert len(lines) == 6 and all(b'"ts"' not in line for line in lines), lines
        seen[typed] = (client_t.last, client_t.writes, upstream_t.last, upstream_t.writes, lines)
    assert seen[True] == seen[False], seen


async def measure(calls: int, rounds: int, access_log: str | None, typed: bool = False) -> list[float]:
    client, conn, client_t, upstream_t, close = await ambassador(access_log, typed)
    per_call = await timed(client.data_received, conn.data_received, calls, rounds)
    assert client_t.last.endswith(b"hello from nginx\n"), client_t.last
    assert client_t.writes == calls // 8 * 8 * rounds and upstream_t.writes == client_t.writes
    assert not client_t.closed and not upstream_t.closed
    close()
    return per_call


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--access-log", help="file, or null (default: a file in a temporary directory)")
    ap.add_argument("--bare", action="store_true", help="the bare forwarder instead of the ambassador")
    ap.add_argument("--typed", action="store_true", help="the typed Cython prototype (typed_call.pyx) instead")
    args = ap.parse_args()
    import uvloop

    with tempfile.TemporaryDirectory() as d:
        if args.typed:
            uvloop.run(check_typed(d))
        # "null" turns the access log off, as in the configuration file (not a file named null)
        log = None if args.access_log == "null" else args.access_log or str(Path(d) / "access.log")
        per_call = uvloop.run(measure_bare(args.calls, args.rounds) if args.bare
                              else measure(args.calls, args.rounds, log, args.typed))
    print(f"{statistics.median(per_call):.3f} µs of CPU per call (median of {args.rounds} rounds of {args.calls}: "
          + ", ".join(f"{x:.3f}" for x in per_call) + ")")


if __name__ == "__main__":
    main()
