"""Timeouts, retries, retry budget, balancing, outlier ejection, breaker, errors, fallbacks."""
from __future__ import annotations

import concurrent.futures
import time

import requests

from ambassador.breaker import CLOSED, HALF_OPEN, OPEN, Breaker
from ambassador.config import BreakerConfig, BudgetConfig, RetryConfig
from ambassador.retry import RetryBudget, backoff, max_retries

from .helpers import Resp, metric_value


def cfg_for(*ups, route=None, **upstream_extra):
    r = {"match": {"path_prefix": "/"}, "upstream": "svc", "timeout": "5s",
         "retry": {"max": 2, "on": ["connect-failure", "reset", "timeout", 502, 503, 504], "backoff": "5ms..20ms"}}
    r.update(route or {})
    # Breaker and ejection stay out of the way unless a test sets them.
    up = {"instances": [u.addr for u in ups], "breaker": {"window": 1000, "min_calls": 1000},
          "outlier": {"consecutive_failures": 1000}}
    up.update(upstream_extra)
    # The default budget floor (10 retries/s) would throttle these quick sequential tests.
    return {"upstreams": {"svc": up}, "routes": [r], "retry_budget": {"ratio": 0.2, "min_per_second": 1000}}


def failing(status=503):
    return lambda req: Resp(status, b'{"bad": true}', {"Content-Type": "application/json"})


def test_retry_lands_on_healthy_instance(upstream, proxy):
    bad, good = upstream("bad", handler=failing()), upstream("good")
    p = proxy(cfg_for(bad, good))
    for _ in range(20):
        r = requests.get(p.url + "/lookup/1", timeout=5)
        assert r.status_code == 200 and r.json()["instance"] == "good"
    assert bad.count() > 0  # it was tried and its 503s were hidden
    log = p.access_log()
    retried = [e for e in log if e["retries"]]
    assert retried and all(e["instance"].endswith(str(good.port)) for e in retried)
    assert metric_value(p.metrics(), "ambassador_retries_total") == len(retried)


def test_retry_prefers_another_instance(upstream, proxy):
    ups = [upstream(f"i{i}", handler=failing()) for i in range(3)]
    p = proxy(cfg_for(*ups, route={"retry": {"max": 2, "on": [503], "backoff": "1ms..2ms"}}))
    for _ in range(10):
        before = [u.count() for u in ups]
        r = requests.get(p.url + "/x", timeout=5)
        assert r.status_code == 503  # all fail: the last answer is passed through
        after = [u.count() for u in ups]
        assert [a - b for a, b in zip(after, before)] == [1, 1, 1]  # three tries, three instances


def test_post_is_not_retried_but_idempotency_key_or_safe_route_allows_it(upstream, proxy):
    bad, good = upstream("bad", handler=failing()), upstream("good")
    p = proxy(cfg_for(bad, good))
    statuses = [requests.post(p.url + "/orders", data=b"o", timeout=5).status_code for _ in range(10)]
    assert bad.count("POST") + good.count("POST") == 10  # every POST sent exactly once
    assert statuses.count(503) == bad.count("POST") > 0
    for _ in range(6):
        r = requests.post(p.url + "/orders", data=b"o", headers={"Idempotency-Key": "k1"}, timeout=5)
        assert r.status_code == 200
    got = [dict((k.lower(), v) for k, v in r.headers) for r in good.log if r.method == "POST"]
    assert got[-1]["idempotency-key"] == "k1"  # the key travels on so the server can deduplicate

    p2 = proxy(cfg_for(bad, good, route={"retry": {"max": 2, "safe": True, "on": [503], "backoff": "1ms..2ms"}}))
    for _ in range(6):
        assert requests.post(p2.url + "/orders", data=b"o", timeout=5).status_code == 200


def test_put_delete_retried_and_retry_max_zero_route_not(upstream, proxy):
    bad, good = upstream("bad", handler=failing()), upstream("good")
    p = proxy({"upstreams": {"svc": {"instances": [bad.addr, good.addr], "outlier": {"consecutive_failures": 1000},
                                     "breaker": {"window": 1000, "min_calls": 1000}}},
               "retry_budget": {"min_per_second": 1000},
               "routes": [{"match": {"path_prefix": "/orders", "method": "PUT"}, "upstream": "svc",
                           "retry": {"max": 0}},
                          {"match": {"path_prefix": "/"}, "upstream": "svc",
                           "retry": {"max": 2, "on": [503], "backoff": "1ms..2ms"}}]})
    for m in ("PUT", "DELETE", "OPTIONS"):
        for _ in range(4):
            assert requests.request(m, p.url + "/things/1", timeout=5).status_code == 200
    codes = [requests.put(p.url + "/orders/1", timeout=5).status_code for _ in range(8)]
    assert 503 in codes and bad.count("PUT", "/orders/1") + good.count("PUT", "/orders/1") == 8


def test_client_retry_hints(upstream, proxy):
    ups = [upstream(f"i{i}", handler=failing()) for i in range(4)]
    p = proxy(cfg_for(*ups, route={"retry": {"max": 3, "on": [503], "backoff": "1ms..2ms"}}))

    def tries(headers):
        before = sum(u.count() for u in ups)
        requests.get(p.url + "/x", headers=headers, timeout=5)
        return sum(u.count() for u in ups) - before
    assert tries({}) == 4
    assert tries({"x-ambassador-retry": "off"}) == 1
    assert tries({"x-ambassador-max-retries": "1"}) == 2
    assert tries({"x-ambassador-max-retries": "0"}) == 1
    assert tries({"x-ambassador-max-retries": "9"}) == 4  # a hint can lower, never raise, the route's cap


def test_hung_upstream_gives_clean_timeout_inside_overall_budget(upstream, proxy):
    hung = [upstream(f"h{i}", handler=lambda req: Resp(200, b"late", delay=30)) for i in range(2)]
    p = proxy(cfg_for(*hung, route={"timeout": "800ms", "per_try_timeout": "300ms"}))
    t = time.monotonic()
    r = requests.get(p.url + "/hang", timeout=10)
    elapsed = time.monotonic() - t
    assert r.status_code == 504
    assert r.headers["Content-Type"] == "application/json"
    assert r.json()["error"] in ("upstream_timeout", "overall_timeout") and r.json()["upstream"] == "svc"
    assert elapsed < 0.8 + 0.15
    assert sum(u.count() for u in hung) >= 2  # it did retry within the budget
    assert metric_value(p.metrics(), "ambassador_timeouts_total", upstream="svc") >= 2


def test_per_try_timeout_then_retry_on_healthy_instance(upstream, proxy):
    hung = upstream("hung", handler=lambda req: Resp(200, b"late", delay=30))
    good = upstream("good")
    p = proxy(cfg_for(hung, good, route={"timeout": "3s", "per_try_timeout": "200ms"}))
    for _ in range(4):
        t = time.monotonic()
        r = requests.get(p.url + "/x", timeout=10)
        assert r.status_code == 200 and r.json()["instance"] == "good"
        assert time.monotonic() - t < 1.0


def test_connect_failure_and_reset_give_clean_502(upstream, proxy):
    dead = upstream("dead")
    dead.kill()
    p = proxy(cfg_for(dead, route={"retry": {"max": 1, "backoff": "1ms..2ms"}}))
    r = requests.get(p.url + "/x", timeout=5)
    assert r.status_code == 502 and r.json()["error"] == "connect_failure" and r.json()["attempts"] == 2
    resetting = upstream("reset", handler=lambda req: Resp(raw=b"HTTP/1.1 200 OK\r\nContent-Le", close=True))
    p2 = proxy(cfg_for(resetting, route={"retry": {"max": 0}}))
    r = requests.get(p2.url + "/x", timeout=5)
    assert r.status_code == 502 and r.json()["error"] == "upstream_reset"


def test_backoff_is_jittered_exponential():
    cfg = RetryConfig(max=5, backoff_base=0.01, backoff_max=0.1)
    for n, ceiling in enumerate([0.01, 0.02, 0.04, 0.08, 0.1, 0.1]):
        samples = [backoff(cfg, n) for _ in range(200)]
        assert all(0 <= s < ceiling + 1e-12 for s in samples)
        assert max(samples) > ceiling * 0.8 and len(set(samples)) > 150  # spread, not a fixed delay
    assert backoff(cfg, 3, rand=lambda: 1.0) == 0.08


def test_max_retries_rules():
    r = RetryConfig(max=2)
    assert max_retries(r, "GET", {}) == 2
    for m in ("HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"):
        assert max_retries(r, m, {}) == 2
    assert max_retries(r, "POST", {}) == 0 and max_retries(r, "PATCH", {}) == 0
    assert max_retries(r, "POST", {b"idempotency-key": b"x"}) == 2
    assert max_retries(RetryConfig(max=2, safe=True), "POST", {}) == 2
    assert max_retries(r, "GET", {b"x-ambassador-retry": b"OFF"}) == 0
    assert max_retries(r, "GET", {b"x-ambassador-max-retries": b"1"}) == 1
    assert max_retries(r, "GET", {b"x-ambassador-max-retries": b"junk"}) == 2


def test_retry_budget_is_a_share_of_requests_in_flight():
    now = [0.0]
    b = RetryBudget(BudgetConfig(ratio=0.2, min_per_second=0), clock=lambda: now[0])
    b.in_flight = 10
    assert b.try_acquire() and b.try_acquire()
    assert not b.try_acquire()  # 2 of 10 in flight are retries already
    b.release()
    assert b.try_acquire()
    floor = RetryBudget(BudgetConfig(ratio=0.0, min_per_second=2), clock=lambda: now[0])
    assert floor.try_acquire() and floor.try_acquire() and not floor.try_acquire()
    now[0] += 0.5
    assert floor.try_acquire() and not floor.try_acquire()  # refills at 2 per second


def test_retry_budget_stops_retry_storm(upstream, proxy):
    ups = [upstream(f"i{i}", handler=failing()) for i in range(2)]
    cfg = cfg_for(*ups)
    cfg["retry_budget"] = {"ratio": 0.0, "min_per_second": 0}
    p = proxy(cfg)
    for _ in range(5):
        assert requests.get(p.url + "/x", timeout=5).status_code == 503
    assert sum(u.count() for u in ups) == 5
    assert metric_value(p.metrics(), "ambassador_retry_budget_exhausted_total") == 5


def test_round_robin_and_least_request(upstream, proxy):
    a, b = upstream("a"), upstream("b")
    p = proxy(cfg_for(a, b))
    for _ in range(20):
        requests.get(p.url + "/", timeout=5)
    assert a.count() == b.count() == 10

    slow = upstream("slow", handler=lambda req: Resp(200, b'{"instance": "slow"}', delay=0.2))
    fast = upstream("fast", handler=lambda req: Resp(200, b'{"instance": "fast"}', delay=0.005))
    p2 = proxy(cfg_for(slow, fast, balance="least_request"))
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda _: requests.get(p2.url + "/", timeout=10), range(80)))
    assert fast.count() > 3 * slow.count()


def test_outlier_ejection(upstream, proxy):
    bad, good = upstream("bad", handler=failing(500)), upstream("good")
    cfg = cfg_for(bad, good, outlier={"consecutive_failures": 2, "eject_for": "10s", "max_ejected_ratio": 0.5})
    p = proxy(cfg)
    # 500 is an application answer (not retried here), but a dead instance is: use connect failures.
    bad.kill()
    for _ in range(30):
        assert requests.get(p.url + "/x", headers={"x-ambassador-retry": "off"}, timeout=5).status_code in (200, 502)
    log = p.access_log()
    to_bad = [e for e in log if e["instance"].endswith(str(bad.port))]
    assert len(to_bad) == 2  # two failures, then ejected for 10 s
    assert metric_value(p.metrics(), "ambassador_outlier_ejections_total") == 1


def test_breaker_unit_transitions():
    now = [0.0]
    b = Breaker(BreakerConfig(window=10, trip_ratio=0.5, min_calls=4, open_for=5, half_open_probes=2),
                clock=lambda: now[0])
    for ok in (True, False, True, False):
        assert b.allow()
        b.record(ok)
    assert b.state == OPEN  # 2 of 4 failed: 50 % reaches the trip point
    assert not b.allow()
    now[0] += 5
    assert b.allow() and b.state == HALF_OPEN
    assert b.allow() and not b.allow()  # two probes at a time
    b.record(True)
    assert b.state == HALF_OPEN
    b.record(True)
    assert b.state == CLOSED
    for _ in range(4):
        b.record(False)
    assert b.state == OPEN
    now[0] += 5
    assert b.allow()
    b.record(False)
    assert b.state == OPEN and not b.allow()  # a failed probe reopens it
    c = Breaker(BreakerConfig(window=10, trip_ratio=0.5, min_calls=4), clock=lambda: 0)
    for ok in (True, True, True, False, True, True, False):
        c.record(ok)
    assert c.state == CLOSED  # 2 of 7 is below the trip point


def test_breaker_window_slides_over_the_last_outcomes():
    """The breaker keeps its window in a ring; it must trip exactly where a plain list of the last
    ``window`` outcomes says the share of failures reaches the trip point."""
    import random
    from collections import deque

    rnd = random.Random(7)
    for window, min_calls, ratio, p_fail in ((4, 4, 0.5, 0.2), (10, 5, 0.5, 0.3), (20, 5, 0.3, 0.15), (3, 1, 1.0, 0.5)):
        b = Breaker(BreakerConfig(window=window, trip_ratio=ratio, min_calls=min_calls, open_for=1),
                    clock=lambda: 0)
        last: deque = deque(maxlen=window)
        for i in range(5000):
            ok = rnd.random() >= p_fail
            last.append(ok)
            b.record(ok)
            failures = sum(1 for x in last if not x)
            should_trip = not ok and len(last) >= min_calls and failures >= ratio * len(last)
            assert b.state == (OPEN if should_trip else CLOSED), (window, i)
            if should_trip:
                b = Breaker(BreakerConfig(window=window, trip_ratio=ratio, min_calls=min_calls, open_for=1),
                            clock=lambda: 0)
                last.clear()
    d = Breaker(BreakerConfig(window=4, trip_ratio=0.5, min_calls=4), clock=lambda: 0)
    for ok in (False, True, True, True, True, False):
        d.record(ok)
    assert d.state == CLOSED  # the first failure has left the window: 1 of 4
    d.record(False)
    assert d.state == OPEN  # 2 of the last 4


def test_killing_all_instances_opens_breaker_and_recovery_closes_it(upstream, proxy):
    ups = [upstream(f"i{i}") for i in range(2)]
    cfg = cfg_for(*ups, breaker={"window": 10, "trip_ratio": 0.5, "min_calls": 4, "open_for": "400ms"},
                  route={"retry": {"max": 1, "backoff": "1ms..2ms"}})
    p = proxy(cfg)
    assert requests.get(p.url + "/x", timeout=5).status_code == 200
    for u in ups:
        u.kill()
    codes = [requests.get(p.url + "/x", timeout=5).status_code for _ in range(8)]
    assert codes[0] == 502 and codes[-1] == 503
    assert metric_value(p.metrics(), "ambassador_breaker_state", upstream="svc") == 1
    fast = [e for e in p.access_log() if e["error"] == "circuit_open"]
    # Refused at once: no try reached for an instance (wall-clock bounds belong in bench/, where the
    # machine is quiet; here other work shares the cores).
    assert fast and all(e["attempts"] == 0 and e["instance"] is None for e in fast)
    r = requests.get(p.url + "/x", timeout=5)
    assert r.status_code == 503 and r.json()["error"] == "circuit_open"
    time.sleep(0.45)
    # Still down after open_for: the probe fails and the breaker opens again.
    assert requests.get(p.url + "/x", timeout=5).status_code == 502
    assert requests.get(p.url + "/x", timeout=5).status_code == 503
    for u in ups:
        u.restart()
    time.sleep(0.45)
    assert requests.get(p.url + "/x", timeout=5).status_code == 200  # the probe
    assert metric_value(p.metrics(), "ambassador_breaker_state", upstream="svc") == 0
    assert all(requests.get(p.url + "/x", timeout=5).status_code == 200 for _ in range(5))


def test_breaker_counts_timeouts(upstream, proxy):
    hung = upstream("hung", handler=lambda req: Resp(200, b"late", delay=5))
    p = proxy(cfg_for(hung, breaker={"window": 4, "min_calls": 2, "trip_ratio": 0.5, "open_for": "10s"},
                      route={"timeout": "100ms", "retry": {"max": 0}}))
    assert requests.get(p.url + "/x", timeout=5).status_code == 504
    assert requests.get(p.url + "/x", timeout=5).status_code == 504
    t = time.monotonic()
    assert requests.get(p.url + "/x", timeout=5).status_code == 503
    assert time.monotonic() - t < 0.05


def test_fallbacks(upstream, proxy):
    state = {"up": True}
    u = upstream("a", handler=lambda req: Resp(200, b'{"v": 1}', {"Content-Type": "application/json"})
                 if state["up"] else Resp(503, b"down"))
    p = proxy({"upstreams": {"svc": {"instances": [u.addr]}},
               "routes": [{"match": {"path_prefix": "/cached"}, "upstream": "svc", "fallback": "last_good",
                           "retry": {"max": 0}},
                          {"match": {"path_prefix": "/static"}, "upstream": "svc", "retry": {"max": 0},
                           "fallback": {"status": 200, "body": '{"items": []}'}}]})
    assert requests.get(p.url + "/cached/1", timeout=5).json() == {"v": 1}
    u.kill()
    r = requests.get(p.url + "/cached/1", timeout=5)
    assert r.status_code == 200 and r.json() == {"v": 1} and r.headers["x-ambassador-fallback"] == "last_good"
    r = requests.get(p.url + "/cached/2", timeout=5)  # never answered: nothing to fall back on
    assert r.status_code == 502
    r = requests.get(p.url + "/static/x", timeout=5)
    assert r.status_code == 200 and r.json() == {"items": []} and r.headers["x-ambassador-fallback"] == "static"
    r = requests.post(p.url + "/static/x", timeout=5)
    assert r.status_code == 502  # fallbacks are for reads only
    assert metric_value(p.metrics(), "ambassador_fallbacks_total") == 2
