"""Forwarding: methods, bodies, headers, Host, keep-alive pools, routing."""
from __future__ import annotations

import hashlib
import socket
import time

import requests

from .helpers import Resp


def one_upstream(u, **route):
    r = {"match": {"path_prefix": "/"}, "upstream": "svc", "timeout": "5s"}
    r.update(route)
    return {"upstreams": {"svc": {"instances": [u.addr]}}, "routes": [r]}


def test_methods_path_query_and_body_are_forwarded(upstream, proxy):
    u = upstream("a")
    p = proxy(one_upstream(u))
    for method in ("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"):
        body = b"" if method in ("GET", "OPTIONS") else f"payload-{method}".encode()
        r = requests.request(method, p.url + "/x/y?q=1&r=%20", data=body, timeout=5)
        assert r.status_code == 200
        doc = r.json()
        assert doc["method"] == method
        assert doc["target"] == "/x/y?q=1&r=%20"
        assert doc["body_sha256"] == hashlib.sha256(body).hexdigest()
    r = requests.head(p.url + "/h", timeout=5)
    assert r.status_code == 200 and r.content == b""
    assert u.log[-1].method == "HEAD"


def test_status_reason_and_end_to_end_headers_come_back(upstream, proxy):
    u = upstream("a", handler=lambda req: Resp(201, b"made", {"X-Custom": "v1", "Set-Cookie": "a=b",
                                                               "Keep-Alive": "timeout=5",
                                                               "Connection": "X-Secret, keep-alive",
                                                               "X-Secret": "hop"}))
    p = proxy(one_upstream(u))
    r = requests.post(p.url + "/make", data=b"x", timeout=5)
    assert r.status_code == 201 and r.content == b"made"
    assert r.headers["X-Custom"] == "v1" and r.headers["Set-Cookie"] == "a=b"
    # Hop-by-hop fields (and fields named in Connection) stop at the proxy.
    assert "X-Secret" not in r.headers and "Keep-Alive" not in r.headers


def test_hop_by_hop_request_headers_are_removed_and_host_rewritten(upstream, proxy):
    u = upstream("a")
    p = proxy(one_upstream(u))
    r = requests.get(p.url + "/e", headers={"Connection": "keep-alive, X-Drop-Me", "X-Drop-Me": "1",
                                            "Keep-Alive": "timeout=1", "TE": "trailers",
                                            "Proxy-Authorization": "Basic eA==", "X-Keep": "yes",
                                            "Host": "localhost:9", "x-ambassador-retry": "off"}, timeout=5)
    got = {k.lower(): v for k, v in r.json()["headers"]}
    for gone in ("x-drop-me", "keep-alive", "te", "proxy-authorization", "x-ambassador-retry"):
        assert gone not in got, gone
    assert got["x-keep"] == "yes"
    assert got["host"] == u.addr  # Host names the upstream, not the proxy
    assert got["via"] == "1.1 ambassador"


def test_host_override(upstream, proxy):
    u = upstream("a")
    cfg = one_upstream(u)
    cfg["upstreams"]["svc"]["host"] = "orders.internal"
    p = proxy(cfg)
    got = {k.lower(): v for k, v in requests.get(p.url + "/", timeout=5).json()["headers"]}
    assert got["host"] == "orders.internal"


def test_large_chunked_request_body_streams_through(upstream, proxy):
    u = upstream("a")
    p = proxy(one_upstream(u))
    h = hashlib.sha256()
    total = 0

    def gen():
        nonlocal total
        for i in range(200):
            chunk = bytes([i % 256]) * 65536
            h.update(chunk)
            total += len(chunk)
            yield chunk
    r = requests.post(p.url + "/upload", data=gen(), timeout=30)  # generator -> chunked encoding
    doc = r.json()
    assert doc["body_len"] == total == 200 * 65536
    assert doc["body_sha256"] == h.hexdigest()
    assert ("Transfer-Encoding", "chunked") in [tuple(x) for x in doc["headers"]]


def test_large_streamed_response_is_not_buffered(upstream, proxy):
    chunks = [bytes([i]) * 100_000 for i in range(100)]
    u = upstream("a", handler=lambda req: Resp(200, chunks=chunks))
    p = proxy(one_upstream(u))
    with requests.get(p.url + "/big", stream=True, timeout=30) as r:
        assert r.headers.get("Transfer-Encoding") == "chunked"
        data = b"".join(r.iter_content(65536))
    assert data == b"".join(chunks)


def test_response_body_arrives_while_upstream_still_sends(upstream, proxy):
    # The upstream sends one chunk and then nothing more: the client must already have it.
    def handler(req):
        return Resp(200, raw=b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n")

    u = upstream("a", handler=handler)
    p = proxy(one_upstream(u))
    s = socket.create_connection(("127.0.0.1", p.port), timeout=5)
    s.sendall(b"GET /s HTTP/1.1\r\nHost: x\r\n\r\n")
    buf = b""
    deadline = time.monotonic() + 5
    while b"first" not in buf and time.monotonic() < deadline:
        buf += s.recv(65536)
    assert b"first" in buf  # the first chunk is delivered before the upstream finished
    s.close()


def test_keep_alive_pool_reuses_upstream_connections(upstream, proxy):
    u = upstream("a")
    p = proxy(one_upstream(u))
    with requests.Session() as s:
        for _ in range(30):
            assert s.get(p.url + "/k", timeout=5).status_code == 200
    for _ in range(10):
        assert requests.get(p.url + "/k", timeout=5).status_code == 200  # new client connections
    assert u.connections == 1


def test_pipelined_requests_are_answered_in_order(upstream, proxy):
    u = upstream("a")
    p = proxy(one_upstream(u))
    s = socket.create_connection(("127.0.0.1", p.port), timeout=5)
    s.sendall(b"".join(b"GET /p%d HTTP/1.1\r\nHost: x\r\n\r\n" % i for i in range(5)))
    buf = b""
    deadline = time.monotonic() + 5
    while buf.count(b"HTTP/1.1 200") < 5 and time.monotonic() < deadline:
        buf += s.recv(65536)
    s.close()
    order = [buf.find(b'"target": "/p%d"' % i) for i in range(5)]
    assert all(x >= 0 for x in order) and order == sorted(order)


def test_http10_client_and_connection_close(upstream, proxy):
    u = upstream("a", handler=lambda req: Resp(200, chunks=[b"abc", b"def"]))
    p = proxy(one_upstream(u))
    s = socket.create_connection(("127.0.0.1", p.port), timeout=5)
    s.sendall(b"GET / HTTP/1.0\r\n\r\n")
    buf = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        buf += d
    s.close()
    head, _, body = buf.partition(b"\r\n\r\n")
    assert b"chunked" not in head.lower() and body == b"abcdef"


def test_expect_100_continue(upstream, proxy):
    u = upstream("a")
    p = proxy(one_upstream(u))
    s = socket.create_connection(("127.0.0.1", p.port), timeout=5)
    s.sendall(b"POST /c HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
    assert s.recv(100).startswith(b"HTTP/1.1 100 Continue")
    s.sendall(b"data")
    buf = b""
    while b"body_len" not in buf:
        buf += s.recv(65536)
    s.close()
    assert b'"body_len": 4' in buf


def test_malformed_request_gets_400(proxy, upstream):
    u = upstream("a")
    p = proxy(one_upstream(u))
    s = socket.create_connection(("127.0.0.1", p.port), timeout=5)
    s.sendall(b"NOT HTTP AT ALL\r\n\r\n")
    assert s.recv(1000).startswith(b"HTTP/1.1 400")
    s.close()


def test_routes_match_prefix_exact_method_and_header(upstream, proxy):
    a, b, c, d = upstream("a"), upstream("b"), upstream("c"), upstream("d")
    cfg = {
        "upstreams": {n: {"instances": [x.addr]} for n, x in zip("abcd", (a, b, c, d))},
        "routes": [
            {"match": {"path": "/exact"}, "upstream": "a"},
            {"match": {"path_prefix": "/api/", "method": ["POST", "PUT"]}, "upstream": "b"},
            {"match": {"path_prefix": "/api/", "headers": {"x-tenant": "blue"}}, "upstream": "c"},
            {"match": {"path_prefix": "/api/"}, "upstream": "d"},
        ],
    }
    p = proxy(cfg)

    def who(method, path, **kw):
        return requests.request(method, p.url + path, timeout=5, **kw).json()["instance"]
    assert who("GET", "/exact") == "a"
    assert requests.get(p.url + "/exact/more", timeout=5).status_code == 404
    assert who("POST", "/api/x", data=b"1") == "b"
    assert who("GET", "/api/x", headers={"X-Tenant": "blue"}) == "c"
    assert who("GET", "/api/x", headers={"X-Tenant": "red"}) == "d"
    r = requests.get(p.url + "/other", timeout=5)
    assert r.status_code == 404 and r.json()["error"] == "no_route"
