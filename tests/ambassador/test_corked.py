"""The HTTP path's writes wait for the end of the loop's tick (decision 0106): what one tick wrote
goes out together after it, in the order it was written, and a close or abort never loses what
was written before it."""
from __future__ import annotations

import asyncio
import socket

from ambassador.corked import CorkedTransport, cork_for

from .helpers import Resp


class Sink(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport = transport


def _pair(lt):
    """A loopback connection: a CorkedTransport on the loop's side, a blocking socket on the other."""
    listener = socket.create_server(("127.0.0.1", 0))

    async def connect():
        transport, _ = await asyncio.get_running_loop().create_connection(Sink, *listener.getsockname())
        return CorkedTransport(transport, cork_for(asyncio.get_running_loop()))
    corked = lt.run(connect())
    peer, _ = listener.accept()
    listener.close()
    peer.settimeout(5)
    return corked, peer


def _read_to_eof(peer) -> bytes:
    buf = b""
    while chunk := peer.recv(65536):
        buf += chunk
    return buf


def _on_the_wire(peer) -> bytes:
    peer.setblocking(False)
    try:
        return peer.recv(65536)
    except BlockingIOError:
        return b""
    finally:
        peer.settimeout(5)


def test_writes_of_one_tick_leave_after_it_in_order_then_the_close(lt):
    corked, peer = _pair(lt)

    def tick():
        for part in (b"one ", b"two ", b"three"):
            corked.write(part)
        corked.close()
        return _on_the_wire(peer), corked.is_closing()  # still inside the tick
    during, closing = lt.call(tick)
    assert during == b"" and closing
    assert _read_to_eof(peer) == b"one two three"
    peer.close()


def test_abort_sends_what_was_written_before_it(lt):
    corked, peer = _pair(lt)

    def tick():
        corked.write(b"answer head ")
        corked.write(b"and body")
        corked.abort()
    lt.call(tick)
    assert _read_to_eof(peer) == b"answer head and body"
    peer.close()


def test_a_burst_then_close_is_answered_whole_and_in_order(upstream, proxy):
    u = upstream("a", handler=lambda req: Resp(200, req.path.encode()))
    p = proxy({"upstreams": {"svc": {"instances": [u.addr]}}, "routes": [{"upstream": "svc"}]})
    s = socket.create_connection(("127.0.0.1", p.port), timeout=5)
    s.sendall(b"GET /warm HTTP/1.1\r\nHost: x\r\n\r\n")
    assert s.recv(65536).endswith(b"/warm")  # a pooled upstream connection: the callback path

    def transports():
        rt = p.app.runtime
        pooled = [c for up in rt.upstreams.values() for i in up.balancer.instances for c in i.idle]
        return [type(c.transport) for c in [*p.app.http.clients, *pooled]]
    assert p.lt.call(transports) == [CorkedTransport, CorkedTransport]  # both sides of the HTTP path
    n = 30
    s.sendall(b"".join(b"GET /c%d HTTP/1.1\r\nHost: x\r\n\r\n" % i for i in range(n - 1))
              + b"GET /c%d HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % (n - 1))
    buf = _read_to_eof(s)  # the close comes after every answer, not before the last ones
    s.close()
    answers = buf.split(b"HTTP/1.1 ")[1:]
    assert len(answers) == n
    assert [a.rsplit(b"\r\n\r\n", 1)[1] for a in answers] == [b"/c%d" % i for i in range(n)]
    assert b"Connection: close" in answers[-1]
    assert [line["path"] for line in p.access_log()] == ["/warm"] + ["/c%d" % i for i in range(n)]
