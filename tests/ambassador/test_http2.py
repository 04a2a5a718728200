"""HTTP/2 towards the upstream (client keeps HTTP/1.1): h2c with prior knowledge, h2 over TLS chosen by
ALPN, many calls multiplexed on one connection, streamed bodies both ways, per-stream timeouts."""
from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import time

import pytest
import requests

from .h2server import H2Upstream
from .helpers import server_context


@pytest.fixture
def h2up(lt):
    made = []

    def make(*args, **kw):
        u = H2Upstream(lt, *args, **kw)
        made.append(u)
        return u
    yield make
    for u in made:
        u.stop()


def h2_cfg(addr, tls=None, **route):
    up = {"instances": [addr], "protocol": "http2"}
    if tls is not None:
        up["tls"] = tls
    r = {"match": {"path_prefix": "/"}, "upstream": "svc"}
    r.update(route)
    return {"upstreams": {"svc": up}, "routes": [r]}


def test_h2c_prior_knowledge_forwards_and_rewrites_headers(h2up, proxy):
    u = h2up()
    p = proxy(h2_cfg(u.addr))
    r = requests.post(p.url + "/echo?x=1", data=b"hello", timeout=5,
                      headers={"X-Custom": "kept", "Connection": "keep-alive, X-Drop", "X-Drop": "hop",
                               "Keep-Alive": "timeout=5", "x-ambassador-retry": "off"})
    assert r.status_code == 200 and r.headers["x-upstream-protocol"] == "h2"
    got = r.json()
    assert got["http_version"] == "2" and got["method"] == "POST" and got["path"] == "/echo"
    assert got["body_len"] == 5
    h = dict(got["headers"])
    assert h["x-custom"] == "kept" and h["via"] == "1.1 ambassador"
    assert h["host"] == u.addr  # sent as :authority (the ASGI server presents it as host)
    # RFC 9113 8.2.2: no connection-specific fields; the proxy hints are consumed.
    for gone in ("connection", "keep-alive", "x-drop", "x-ambassador-retry", "transfer-encoding"):
        assert gone not in h
    assert dict(r.headers).get("Content-Length") == str(len(r.content))


def test_concurrent_calls_share_one_multiplexed_connection(h2up, proxy):
    u = h2up()
    p = proxy(h2_cfg(u.addr))
    n, delay = 12, 0.4

    def call(i):
        return requests.get(f"{p.url}/slow?delay={delay}&i={i}", timeout=10)
    t = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(n) as pool:
        answers = list(pool.map(call, range(n)))
    elapsed = time.monotonic() - t
    assert all(a.status_code == 200 for a in answers)
    assert elapsed < delay * 3  # concurrent streams, not one after another
    assert len(u.connections()) == 1  # one connection for the instance, however many calls
    # Later calls reuse it too.
    assert requests.get(p.url + "/again", timeout=5).json()["client_port"] in u.connections()
    assert len(u.connections()) == 1


def test_h2_over_tls_by_alpn_with_client_certificate(h2up, proxy, pki):
    cert, key = pki["server"]
    u = h2up("tls", cert=cert, key=key, client_ca=pki["ca"].path)
    ccert, ckey = pki["client"]
    p = proxy(h2_cfg(u.addr, tls={"ca": str(pki["ca"].path), "cert": str(ccert), "key": str(ckey),
                                  "server_name": "orders.internal"}))
    r = requests.get(p.url + "/secure", timeout=5)
    assert r.status_code == 200 and r.json()["http_version"] == "2"


def test_upstream_without_h2_in_alpn_is_a_connect_failure(upstream, proxy, pki):
    cert, key = pki["server"]
    h1_only = upstream("h1", ssl_ctx=server_context(cert, key, alpn=["http/1.1"]))
    p = proxy(h2_cfg(h1_only.addr, tls={"ca": str(pki["ca"].path), "server_name": "localhost"}, retry={"max": 0}))
    r = requests.get(p.url + "/x", timeout=5)
    assert r.status_code == 502 and r.json()["error"] == "connect_failure"
    assert "HTTP/2" in r.json()["detail"]
    assert h1_only.count() == 0


def test_large_bodies_stream_both_ways_under_flow_control(h2up, proxy):
    u = h2up()
    p = proxy(h2_cfg(u.addr))
    # 3 MiB up, chunked by the client: larger than the retry buffer and every HTTP/2 window.
    blob = bytes(range(256)) * (3 * 4096)

    def gen():
        for i in range(0, len(blob), 100_000):
            yield blob[i:i + 100_000]
    r = requests.put(p.url + "/upload", data=gen(), timeout=20)
    got = r.json()
    assert got["body_len"] == len(blob) and got["body_sha256"] == hashlib.sha256(blob).hexdigest()
    # 4 MiB down, streamed by the upstream; the client reads it as it comes.
    with requests.get(p.url + "/stream?chunks=64&size=65536", timeout=20, stream=True) as r:
        assert r.headers.get("Transfer-Encoding") == "chunked"
        total = sum(len(c) for c in r.iter_content(65536))
    assert total == 64 * 65536


def test_per_try_timeout_resets_one_stream_and_spares_the_connection(h2up, proxy):
    u = h2up()
    p = proxy(h2_cfg(u.addr, per_try_timeout="300ms", timeout="2s", retry={"max": 0}))
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        slow = pool.submit(requests.get, p.url + "/slow?delay=1.5", timeout=5)
        time.sleep(0.05)
        fast = pool.submit(requests.get, p.url + "/slow?delay=0.1", timeout=5)
        assert fast.result().status_code == 200
        assert slow.result().status_code == 504 and slow.result().json()["error"] == "upstream_timeout"
    assert requests.get(p.url + "/after", timeout=5).status_code == 200
    assert len(u.connections()) == 1  # the timed-out stream was reset, its connection kept


def test_retry_over_http2_lands_on_the_healthy_instance(h2up, proxy):
    bad, good = h2up("bad"), h2up("good")
    p = proxy({"upstreams": {"svc": {"instances": [bad.addr, good.addr], "protocol": "http2",
                                     "breaker": {"window": 20, "min_calls": 20}}},
               "routes": [{"match": {"path_prefix": "/status/"}, "upstream": "svc",
                           "retry": {"max": 1, "backoff": "1ms..2ms"}},
                          {"match": {"path_prefix": "/"}, "upstream": "svc", "retry": {"max": 0}}]})
    # /status/503 fails on whichever instance answers; the retry must go to the other one.
    r = requests.get(p.url + "/status/503", timeout=5)
    assert r.status_code == 503
    assert len(bad.log) == 1 and len(good.log) == 1
    bad.stop()
    for _ in range(4):
        r = requests.get(p.url + "/status/200", timeout=5)
        assert r.status_code == 200 and r.json()["instance"] == "good", r.text


def test_bytes_held_back_for_a_paused_stream_are_acknowledged_when_it_is_let_go(h2up, proxy):
    """A slow client pauses its stream: received bytes are acknowledged only once it takes them.
    When the answer completes while paused, the stream is let go with bytes unacknowledged; they
    must be acknowledged then, or the connection's window shrinks for good and, stream after
    stream, every call on the connection stalls."""
    u = h2up()
    p = proxy(h2_cfg(u.addr))
    assert requests.get(p.url + "/x", timeout=5).status_code == 200  # one connection, warm
    up = p.app.runtime.upstreams["svc"]
    inst = up.balancer.instances[0]

    async def scenario():
        conn = await up.acquire(inst)
        acked = []
        real = conn.h2.acknowledge_received_data

        def counting(n, sid):
            acked.append((sid, n))
            return real(n, sid)

        conn.h2.acknowledge_received_data = counting
        ex = conn.send([(":method", "GET"), (":scheme", "http"), (":authority", u.addr),
                        (":path", "/stream?size=16384&chunks=4")], None, False)
        ex.pause()  # the client's pause_writing, before any byte of the answer
        await asyncio.wait_for(ex.wait_head(), 5)
        while not ex.done:
            await asyncio.sleep(0.01)
        held = ex.unacked
        ex.release()
        return held, sum(n for sid, n in acked if sid == ex.sid)

    held, acknowledged = p.lt.run(scenario())
    assert held >= 4 * 16384 and acknowledged == held
