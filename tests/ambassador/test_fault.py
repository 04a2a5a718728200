"""The fault test: thousands of calls while instances are killed and restarted."""
from __future__ import annotations

import collections
import concurrent.futures
import json
import random
import threading
import time

import requests

from .helpers import Resp


def test_every_call_answered_in_time_and_no_post_sent_twice(upstream, proxy):
    posts = collections.Counter()
    rng = random.Random(5)

    def handler(req):
        if req.method == "POST":
            posts[req.body.decode()] += 1
        delay = 0.5 if rng.random() < 0.02 else 0.0  # some calls hang past the per-try timeout
        return Resp(200, b'{"ok": true}', delay=delay)

    ups = [upstream(f"i{i}", handler=handler) for i in range(3)]
    p = proxy({"upstreams": {"svc": {"instances": [u.addr for u in ups],
                                     "breaker": {"window": 50, "trip_ratio": 0.9, "open_for": "200ms"},
                                     "outlier": {"consecutive_failures": 3, "eject_for": "300ms"}}},
               "routes": [{"upstream": "svc", "timeout": "1s", "per_try_timeout": "300ms",
                           "retry": {"max": 2, "backoff": "5ms..50ms"}}],
               "retry_budget": {"ratio": 0.5, "min_per_second": 100},
               "telemetry": {"access_log": None}})
    stop = threading.Event()

    def chaos():
        r = random.Random(7)
        while not stop.is_set():
            victim = r.choice(ups)
            victim.kill()
            time.sleep(r.uniform(0.05, 0.2))
            victim.restart()
            time.sleep(r.uniform(0.05, 0.15))

    n = 2500
    session = threading.local()

    def call(i):
        s = getattr(session, "s", None) or requests.Session()
        session.s = s
        t = time.monotonic()
        if i % 3 == 0:
            r = s.post(p.url + "/orders", data=f"order-{i}".encode(), timeout=5)
        else:
            r = s.get(p.url + f"/lookup/{i}", timeout=5)
        elapsed = time.monotonic() - t
        clean = r.status_code == 200 or (r.status_code in (502, 503, 504)
                                         and "error" in json.loads(r.content))
        return r.status_code, elapsed, clean

    killer = threading.Thread(target=chaos, daemon=True)
    killer.start()
    try:
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            results = list(pool.map(call, range(n)))
    finally:
        stop.set()
        killer.join(5)
        for u in ups:
            try:
                u.restart()
            except OSError:
                pass  # already running
    assert len(results) == n
    assert all(clean for _, _, clean in results)
    assert max(e for _, e, _ in results) < 1.0 + 0.3  # nothing hangs past the overall timeout
    codes = collections.Counter(c for c, _, _ in results)
    assert codes[200] > n * 0.5
    assert posts and max(posts.values()) == 1  # no POST ever reached an instance twice
