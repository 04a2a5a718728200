"""bench/ambassador/response_head.py compares equal work: its passthrough way (the head's bytes with
the hop-by-hop lines cut out) forwards exactly the fields that the proxy's header callbacks
forward, odd, repeated and hop-by-hop fields included (decision 0112)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ambassador.exchange import Exchange
from ambassador.upstream import H1Conn

BENCH = str(Path(__file__).resolve().parents[2] / "bench" / "ambassador")

ANSWERS = {
    "nginx": None,  # callpath.RESPONSE, what the benchmark times
    "odd and repeated fields": b"HTTP/1.1 200 OK\r\nConnection: keep-alive, x-hop\r\nSet-Cookie: a=1\r\n"
                               b"KEEP-ALIVE: timeout=5\r\nSet-Cookie: b=2\r\nTE: trailers\r\nx-te: 1\r\nx-hop: 2\r\n"
                               b"Content-Length: 2\r\nX-Empty:\r\nProxy-Connection: close\r\n\r\nhi",
    "chunked": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: x\r\nUpgrade: h2c\r\nVary: te\r\n"
               b"Proxy-Authenticate: Basic\r\ncontent-lengthy: 1\r\n\r\n2\r\nhi\r\n0\r\n\r\n",
}


def _fields(head: bytes) -> list:
    return [(n, v.strip()) for n, _, v in (line.partition(b":") for line in head.split(b"\r\n") if line)]


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, BENCH)
    try:
        import callpath
        import response_head
        yield callpath, response_head
    finally:
        sys.path.remove(BENCH)


@pytest.mark.parametrize("name", ANSWERS)
def test_passthrough_forwards_what_the_callbacks_forward(bench, name):
    callpath, response_head = bench
    answer = ANSWERS[name] or callpath.RESPONSE
    conn = H1Conn(response_head.Upstream(), None, 0)
    conn.ex = Exchange(conn, True)
    conn.parser.feed_data(answer)
    forwarded = b"".join(conn.ex.fields)
    assert conn.ex.done and b"keep-alive" not in forwarded.lower() and b"Content-Length" not in forwarded

    passthrough = response_head.Passthrough()
    passthrough.feed(answer)
    # The same fields in the same order; the passthrough keeps each line as received (``X-Empty:``
    # where the callbacks write ``X-Empty: ``).
    assert _fields(passthrough.fields) == _fields(forwarded) != []
    floor = response_head.Floor()
    floor.feed(answer)
    assert floor.status == passthrough.status == conn.ex.status == 200 and floor.done
