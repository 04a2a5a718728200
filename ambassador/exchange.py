"""One request/response on an upstream connection and what both connection kinds (HTTP/1.1 in
``upstream``, HTTP/2 in ``h2conn``) and the proxy share: hop-by-hop field names, field-list
helpers and the failures."""
from __future__ import annotations

import asyncio

from .errors import AmbassadorError

# RFC 9110 section 7.6.1, plus the pre-standard Keep-Alive/Proxy-Connection and proxy auth fields.
HOP_BY_HOP = frozenset({b"connection", b"keep-alive", b"proxy-connection", b"te", b"transfer-encoding",
                        b"upgrade", b"trailer", b"proxy-authenticate", b"proxy-authorization"})
RESPONSE_DROP = HOP_BY_HOP | {b"content-length"}  # the proxy frames the answer to the client itself


def field_pairs(fields: list):
    """(name, value) of each field in a list of pieces."""
    return zip(fields[0::4], fields[2::4])


def without_fields(fields: list, names) -> list:
    """The pieces of the fields whose lower-case name is not in ``names``."""
    out = []
    for i in range(0, len(fields), 4):
        if fields[i].lower() not in names:
            out += fields[i:i + 4]
    return out


class ConnectFailure(AmbassadorError):
    """The connection (TCP or TLS handshake) could not be made: nothing reached the upstream."""


class UpstreamReset(AmbassadorError):
    """The connection broke before the whole response was read."""


class Exchange:
    """One request/response on an upstream connection. Protocol callbacks push into it. The proxy
    learns of the response head either through ``owner`` (a call: its proxy's (``call.cc.server``)
    ``head_arrived(call)`` or ``try_failed(call, exc)`` is called from the connection's callbacks,
    no future, no task) or by awaiting ``wait_head()``; then it attaches a sink that receives body chunks
    synchronously. The proxy
    ends it with ``release()`` (answer consumed) or ``abort()`` (given up).

    The response's header fields are kept as pieces ready to send (``fields``, see above), without
    the hop-by-hop ones and Content-Length, whose values are kept aside (``length``, ``conn_value``)."""

    __slots__ = ("conn", "status", "reason", "fields", "length", "conn_value", "keep_alive", "head", "ready", "owner",
                 "sink", "pending", "done", "error", "body_sent", "received", "pump", "reused")

    def __init__(self, conn, reused: bool):
        self.conn = conn
        self.status = 0
        self.reason = b""
        self.fields: list = []
        self.length = None
        self.conn_value = None
        self.keep_alive = True
        self.head = None  # a future, made only for those who wait_head()
        self.ready = False  # the response head is here
        self.owner = None
        self.sink = None
        self.pending: list = []
        self.done = False
        self.error: BaseException | None = None
        self.body_sent = False
        self.received = False  # any response byte seen (a reset before that is a clean "nothing happened")
        self.pump = None
        self.reused = reused

    def head_done(self) -> None:
        self.ready = True
        head = self.head
        if head is not None and not head.done():
            head.set_result(None)  # not self: that would make every exchange a reference cycle

    def wait_head(self) -> asyncio.Future:
        head = self.head
        if head is None:
            head = self.head = self.conn.loop.create_future()
            if self.ready:
                head.set_result(None)
            elif self.error is not None:
                head.set_exception(self.error)
        return head

    def expire(self) -> None:
        """The per-try timer fired before the response head arrived."""
        head = self.head
        if head is not None and not head.done():
            head.set_exception(TimeoutError())

    def data(self, chunk: bytes) -> None:
        if self.sink is not None:
            self.sink.data(chunk)
        else:
            self.pending.append(chunk)

    def complete(self) -> None:
        self.done = True
        if self.sink is not None:
            self.sink.end()

    def fail(self, exc: BaseException) -> None:
        if self.done or self.error is not None:
            return
        self.error = exc
        owner = self.owner
        if owner is not None:
            self.owner = None
            if self.ready:
                owner.cc.server.head_arrived(owner)  # the answer broke after its head: its sink will hear of it
            else:
                owner.cc.server.try_failed(owner, exc)
            return
        if not self.ready:
            head = self.head
            if head is not None and not head.done():
                head.set_exception(exc)
        elif self.sink is not None:
            self.sink.fail(exc)

    def attach(self, sink) -> None:
        self.sink = sink
        if self.pending:
            for chunk in self.pending:
                sink.data(chunk)
            self.pending.clear()
        if self.done:
            sink.end()
        elif self.error is not None:
            sink.fail(self.error)

    # HTTP/1.1: the exchange owns its connection while it runs; a finished one goes back to the pool.
    def release(self) -> None:
        conn = self.conn
        conn.ex = None
        up = conn.upstream
        inst = conn.inst
        if self.done and self.keep_alive and self.body_sent and not conn.closed and not up.closed \
                and not inst.removed and len(inst.idle) < up.max_idle:
            if conn.read_paused:
                # A slow client paused reading in the very read that completed the answer: a pooled
                # connection left paused would never hear its next answer.
                conn.resume_reading()
            conn.idle_since = up.loop.time()
            inst.idle.append(conn)
        else:
            conn.close()

    def abort(self) -> None:
        conn = self.conn
        conn.close()
        conn.ex = None

    def pause(self) -> None:
        self.conn.pause_reading()

    def resume(self) -> None:
        self.conn.resume_reading()


class ClientGone(AmbassadorError):
    """The client went away while its request body was being streamed."""
