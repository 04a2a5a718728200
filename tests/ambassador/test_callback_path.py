"""Calls on a pooled upstream connection run from protocol callbacks, without a task, until something
needs one (a timeout, a broken connection, a retry, a body still streaming). These tests warm the
pool first so that each case starts on that path, and check that every in-flight count returns to
zero afterwards."""
from __future__ import annotations

import asyncio
import hashlib
import socket
import time

import requests

from .helpers import Resp, metric_value, wait_for

BIG = bytes(range(256)) * 16384  # 4 MiB: arrives in many reads after its head


def handler(req):
    if req.path == "/hang":
        return Resp(200, b"late", delay=30)
    if req.path == "/drop":
        return Resp(raw=b"", close=True)  # reads the request, closes without a byte of answer
    if req.path == "/big":
        return Resp(200, BIG)
    return Resp(200, b"ok", {"Content-Type": "text/plain"})


def config(u, **route):
    r = {"match": {"path_prefix": "/"}, "upstream": "svc", "timeout": "5s",
         "retry": {"max": 2, "on": ["connect-failure", "reset", "timeout", 502, 503, 504], "backoff": "1ms..2ms"}}
    r.update(route)
    return {"upstreams": {"svc": {"instances": [u.addr], "breaker": {"window": 1000, "min_calls": 1000},
                                  "outlier": {"consecutive_failures": 1000}}},
            "routes": [r], "retry_budget": {"ratio": 0.2, "min_per_second": 1000}}


def counts(p) -> dict:
    def read():
        rt = p.app.runtime
        return {"calls": rt.in_flight, "budget": rt.budget.in_flight, "retries": rt.budget.retries_in_flight,
                "active": sum(i.active for up in rt.upstreams.values() for i in up.balancer.instances),
                "waiting": len(p.app.http.waiting)}
    return p.lt.call(read)


IDLE = {"calls": 0, "budget": 0, "retries": 0, "active": 0, "waiting": 0}


def idle_connections(p) -> int:
    return p.lt.call(lambda: sum(len(i.idle) for up in p.app.runtime.upstreams.values()
                                 for i in up.balancer.instances))


def warm(p):
    assert requests.get(p.url + "/ok", timeout=5).text == "ok"
    assert idle_connections(p) == 1


def test_pooled_calls_keep_the_pool_and_answer_head_and_get(upstream, proxy):
    u = upstream("a", handler=handler)
    p = proxy(config(u))
    warm(p)
    with requests.Session() as s:
        for _ in range(5):
            r = s.head(p.url + "/ok", timeout=5)
            assert r.status_code == 200 and r.content == b""
            assert s.get(p.url + "/ok", timeout=5).text == "ok"
    assert u.connections == 1
    assert counts(p) == IDLE


def test_per_try_timeout_on_a_pooled_connection(upstream, proxy):
    u = upstream("a", handler=handler)
    p = proxy(config(u, timeout="700ms", per_try_timeout="200ms"))
    warm(p)
    t = time.monotonic()
    r = requests.get(p.url + "/hang", timeout=10)
    elapsed = time.monotonic() - t
    assert r.status_code == 504 and r.json()["error"] in ("upstream_timeout", "overall_timeout")
    assert 0.2 <= elapsed < 0.7 + 0.15
    assert r.json()["attempts"] >= 2  # the first try timed out on the pooled connection, then retried
    assert metric_value(p.metrics(), "ambassador_timeouts_total", upstream="svc") >= 2
    wait_for(lambda: counts(p) == IDLE)
    assert requests.get(p.url + "/ok", timeout=5).text == "ok"  # the timed-out connection was not reused


def test_client_leaving_while_its_call_waits_on_a_pooled_connection(upstream, proxy):
    u = upstream("a", handler=handler)
    p = proxy(config(u))
    warm(p)
    s = socket.create_connection(("127.0.0.1", p.port), timeout=5)
    s.sendall(b"GET /hang HTTP/1.1\r\nHost: x\r\n\r\n")
    wait_for(lambda: u.count("GET", "/hang") == 1)
    assert counts(p)["waiting"] == 1
    s.close()
    wait_for(lambda: any(e["status"] == 499 for e in p.access_log()))
    entry = [e for e in p.access_log() if e["status"] == 499][0]
    assert entry["error"] == "client_gone" and entry["path"] == "/hang"
    wait_for(lambda: counts(p) == IDLE)
    assert idle_connections(p) == 0  # the connection still owing an answer was closed, not pooled
    assert requests.get(p.url + "/ok", timeout=5).text == "ok"


def test_pooled_connection_closed_without_an_answer(upstream, proxy):
    u = upstream("a", handler=handler)
    p = proxy(config(u))
    warm(p)
    r = requests.post(p.url + "/drop", data=b"order", timeout=5)
    assert r.status_code == 502 and r.json()["error"] == "upstream_reset"
    assert u.count("POST", "/drop") == 1  # a POST is never sent twice, not even to a fresh connection
    warm(p)
    r = requests.get(p.url + "/drop", timeout=5)
    assert r.status_code == 502 and r.json()["error"] == "upstream_reset"
    # The pooled connection's reset is replayed once for free, then the two retries: four sends.
    assert u.count("GET", "/drop") == 4 and r.json()["attempts"] == 4
    wait_for(lambda: counts(p) == IDLE)


def test_answer_streamed_after_its_head_on_a_pooled_connection(upstream, proxy):
    u = upstream("a", handler=handler)
    p = proxy(config(u))
    warm(p)
    with requests.Session() as s:
        for _ in range(3):
            r = s.get(p.url + "/big", timeout=30)
            assert r.status_code == 200 and hashlib.sha256(r.content).digest() == hashlib.sha256(BIG).digest()
            assert s.get(p.url + "/ok", timeout=5).text == "ok"
    assert u.connections == 1
    assert counts(p) == IDLE


def test_pipelined_calls_on_pooled_connections_finish_in_order(upstream, proxy):
    u = upstream("a", handler=handler)
    p = proxy(config(u))
    warm(p)
    s = socket.create_connection(("127.0.0.1", p.port), timeout=5)
    s.sendall(b"GET /ok HTTP/1.1\r\nHost: x\r\n\r\n" * 40 + b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n"
              + b"GET /ok HTTP/1.1\r\nHost: x\r\n\r\n" * 3)
    buf = b""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not (buf.count(b"HTTP/1.1 200") == 44 and buf.endswith(b"ok")):
        chunk = s.recv(1 << 20)
        if not chunk:
            break
        buf += chunk
    s.close()
    assert buf.count(b"HTTP/1.1 200") == 44
    assert BIG in buf and buf.endswith(b"ok")
    wait_for(lambda: counts(p) == IDLE)


def test_access_log_time_and_duration_on_the_callback_path(upstream, proxy):
    u = upstream("a", handler=handler)
    p = proxy(config(u))
    warm(p)
    with requests.Session() as s:
        for _ in range(3):
            before = time.time()
            t = time.monotonic()
            assert s.get(p.url + "/ok", timeout=5).text == "ok"
            elapsed_ms = (time.monotonic() - t) * 1000
            after = time.time()
            entry = p.access_log()[-1]
            # The wall clock is derived from the perf counter; it must still be the wall clock.
            assert before - 0.01 <= entry["ts"] <= after + 0.01
            assert 0 < entry["duration_ms"] <= elapsed_ms
            assert entry["attempts"] == 1 and entry["retries"] == 0 and entry["error"] is None


def test_connection_paused_by_a_slow_client_goes_back_to_the_pool_reading(upstream, proxy):
    """A client whose buffer fills pauses the upstream connection's reading; when that happens in the
    read that completes the answer, the connection is pooled. It must be reading again there, or the
    next call on it waits for an answer it never reads (seen as an overall timeout under load)."""
    u = upstream("a", handler=handler)
    p = proxy(config(u))
    warm(p)
    up = p.app.runtime.upstreams["svc"]
    inst = up.balancer.instances[0]
    request = b"GET /ok HTTP/1.1\r\nHost: a\r\n\r\n"

    async def scenario():
        conn = await up.acquire(inst)
        ex = conn.send(request, None, False, False)
        await asyncio.wait_for(ex.wait_head(), 5)
        while not ex.done:
            await asyncio.sleep(0.01)
        ex.pause()  # the client's pause_writing, arriving before the proxy let go of the exchange
        ex.release()
        again = await up.acquire(inst)
        assert again is conn  # reused from the pool
        ex = again.send(request, None, False, False)
        await asyncio.wait_for(ex.wait_head(), 2)
        ex.abort()
        return ex.status

    assert p.lt.run(scenario()) == 200


def test_client_leaving_in_the_middle_of_its_body(upstream, proxy):
    u = upstream("a", handler=handler)
    p = proxy(config(u))
    warm(p)
    s = socket.create_connection(("127.0.0.1", p.port), timeout=5)
    s.sendall(b"POST /ok HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n" + b"x" * 100_000)
    wait_for(lambda: counts(p)["calls"] == 1)
    s.close()
    wait_for(lambda: any(e["status"] == 499 for e in p.access_log()))
    entry = [e for e in p.access_log() if e["status"] == 499][0]
    assert entry["error"] == "client_gone" and entry["path"] == "/ok"
    wait_for(lambda: counts(p) == IDLE)
    # the upstream connection that had half a body was closed, not pooled, and nothing else is held
    assert idle_connections(p) == 0 and u.count("POST", "/ok") == 0
    assert requests.get(p.url + "/ok", timeout=5).text == "ok"
