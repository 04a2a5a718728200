#!/usr/bin/env python3
"""What the upstream answer's head costs to read, three ways, on nginx's answer as callpath.py
feeds it (process CPU time, so a loaded machine moves it less than wall time):

- ``callbacks``: the ambassador's H1Conn as it is, httptools calling ``on_status`` and
  ``on_header`` for every field, each field sorted by its name (forwarded, framing, hop-by-hop);
- ``passthrough``: no header callbacks; the head's bytes are kept as received and only the
  hop-by-hop fields and Content-Length are cut out of them (the head lowered once, one regular
  expression finds those lines), the way a proxy forwarding the head untouched would;
- ``floor``: no header callbacks and nothing done with the head: what no design of the head's
  handling can go below while httptools frames the answer.

    python bench/ambassador/response_head.py [--calls 300000] [--rounds 5]
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, os.environ.get("PYTHONPATH") or str(Path(__file__).resolve().parents[2]))
sys.path.insert(1, str(Path(__file__).resolve().parent))

import httptools  # noqa: E402
from callpath import RESPONSE  # noqa: E402

from ambassador.exchange import RESPONSE_DROP, Exchange  # noqa: E402
from ambassador.upstream import H1Conn  # noqa: E402

# Every field the proxy drops from an answer, at the start of a line of the lowered head.
_DROP_LINE = re.compile(rb"\r\n(?:" + b"|".join(re.escape(n) for n in sorted(RESPONSE_DROP)) + rb"):")


class Floor:
    def __init__(self):
        self.parser = httptools.HttpResponseParser(self)

    def feed(self, data: bytes) -> None:
        self.parser.feed_data(data)

    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()

    def on_body(self, body: bytes) -> None:
        self.body = body

    def on_message_complete(self) -> None:
        self.done = True


class Passthrough(Floor):
    def __init__(self):
        super().__init__()
        self.raw = b""

    def feed(self, data: bytes) -> None:
        self.raw += data
        self.parser.feed_data(data)

    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()
        raw, self.raw = self.raw, b""
        end = raw.find(b"\r\n\r\n")
        low = raw[:end].lower()
        pos = raw.find(b"\r\n")
        kept = []
        for m in _DROP_LINE.finditer(low, pos):
            kept.append(raw[pos:m.start()])
            pos = low.find(b"\r\n", m.start() + 2)
            if pos < 0:
                pos = end
        kept.append(raw[pos:end])
        self.fields = b"".join(kept)


class Upstream:
    """What H1Conn needs of its upstream."""

    loop = None


def feeds() -> dict:
    """Each way's feed; every one makes the exchange H1Conn needs per answer, so that is not the difference."""
    conn = H1Conn(Upstream(), None, 0)
    passthrough = Passthrough()
    floor = Floor()

    def with_callbacks(data: bytes) -> None:
        conn.ex = Exchange(conn, True)
        conn.parser.feed_data(data)

    def without(proto):
        def feed(data: bytes) -> None:
            proto.ex = Exchange(conn, True)
            proto.feed(data)
        return feed
    return {"callbacks": with_callbacks, "passthrough": without(passthrough), "floor": without(floor)}


def timed(feed, calls: int) -> float:
    start = time.process_time_ns()
    for _ in range(calls):
        feed(RESPONSE)
    return (time.process_time_ns() - start) / calls / 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=300_000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    ways = feeds()
    results: dict = {name: [] for name in ways}
    for _ in range(args.rounds):
        for name, feed in ways.items():  # taking turns, so a change in the machine's load hits all
            results[name].append(timed(feed, args.calls))
    for name, values in results.items():
        print(f"{name:12} {statistics.median(values):.3f} µs per answer (median of {args.rounds}: "
              + ", ".join(f"{v:.3f}" for v in values) + ")")


if __name__ == "__main__":
    main()
