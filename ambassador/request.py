"""A request on its way through the proxy: its body as it arrives (kept in memory so a retry can
replay it), the Call that follows it from its head to the end of its answer, and the head each try
sends upstream, built from the client's fields (HTTP/1.1 bytes, or HTTP/2 header pairs).
"""
from __future__ import annotations

import asyncio
import json
import time

from .exchange import ClientGone, field_pairs, without_fields

TRACE_FIELDS = frozenset({b"traceparent", b"tracestate"})
REPLAY_LIMIT_HIGH = 1 << 20
REPLAY_LIMIT_LOW = 256 << 10
VIA = b"Via: 1.1 ambassador\r\n"
VIA_H2 = (b"via", b"1.1 ambassador")  # the protocol received from the client, whatever goes upstream
_encode_str = json.encoder.encode_basestring  # C: a JSON string literal, non-ASCII kept as is
_perf_counter_ns = time.perf_counter_ns
_METHODS: dict = {}  # method -> (str, JSON string); bounded: llhttp accepts only the methods it knows


def _connection_tokens(headers_lc: dict) -> frozenset:
    v = headers_lc.get(b"connection")
    if not v:
        return frozenset()
    return frozenset(t.strip().lower() for t in v.split(b","))


class Body:
    """A request body as it arrives. Kept in memory up to ``limit`` bytes so a retry can replay it;
    past that it streams through once and the request is no longer retryable."""

    __slots__ = ("conn", "chunks", "size", "done", "limit", "replayable", "dropped", "waiter", "error",
                 "consumed", "length", "chunked", "paused")

    def __init__(self, conn, limit: int, length: int | None, chunked: bool):
        self.conn = conn
        self.chunks: list = []
        self.size = 0
        self.done = False
        self.limit = limit
        self.replayable = True
        self.dropped = False
        self.waiter: asyncio.Future | None = None
        self.error: BaseException | None = None
        self.consumed = 0
        self.length = length
        self.chunked = chunked
        self.paused = False

    def feed(self, data: bytes) -> None:
        self.chunks.append(data)
        self.size += len(data)
        if self.size > self.limit:
            self.replayable = False
        if self.size - self.consumed > REPLAY_LIMIT_HIGH and not self.paused:
            self.paused = True
            self.conn.transport.pause_reading()
        self._wake()

    def finish(self) -> None:
        self.done = True
        self._wake()

    def abort(self) -> None:
        if not self.done:
            self.error = ClientGone("client closed the connection during the request body")
            self._wake()

    def _wake(self) -> None:
        w = self.waiter
        if w is not None:
            self.waiter = None
            if not w.done():
                w.set_result(None)

    def complete_in_memory(self) -> bool:
        return self.done and not self.dropped and self.error is None

    def data(self) -> bytes:
        return b"".join(self.chunks)

    def framed(self, chunked: bool) -> bytes:
        data = b"".join(self.chunks)
        if not chunked:
            return data
        return (b"%x\r\n%b\r\n0\r\n\r\n" % (len(data), data)) if data else b"0\r\n\r\n"

    async def stream(self):
        i = 0
        read = 0
        while True:
            if i < len(self.chunks):
                chunk = self.chunks[i]
                if not self.replayable:
                    self.chunks[i] = None  # streamed once: nothing will replay it
                    self.dropped = True
                i += 1
                read += len(chunk)
                if read > self.consumed:
                    self.consumed = read
                    if self.paused and self.size - read < REPLAY_LIMIT_LOW and not self.conn.closed:
                        self.paused = False
                        self.conn.transport.resume_reading()
                yield chunk
                continue
            if self.error is not None:
                raise self.error
            if self.done:
                return
            self.waiter = asyncio.get_running_loop().create_future()
            await self.waiter


class Call:
    """One client request, from its head to the end of its answer: the request itself (``fields`` are
    its header fields to forward as pieces ``[name, b": ", value, b"\\r\\n", ...]``, the fields the proxy
    always drops already left out; ``filter`` says some may still have to go depending on the
    upstream: its token replaces Authorization, a span the trace fields, and Connection may name
    more hop-by-hop fields), what the access log, metrics and span say about it, and where the
    retry loop stands."""

    __slots__ = ("cc", "method", "method_s", "method_json", "url", "path", "fields", "lc", "filter", "hints",
                 "framing", "version", "keep_alive", "body", "t0", "start", "rt", "route", "span", "trace_pairs",
                 "attempts", "retries", "instance", "error", "status", "fallback", "deadline", "allowed_retries",
                 "base", "inst", "ex", "token", "task", "started", "resume", "kind", "cause", "detail", "sink")

    def __init__(self, cc, method, url, fields, lc, filter_, hints, framing, version, keep_alive, body, t0):
        self.cc = cc
        self.method = method
        names = _METHODS.get(method)
        if names is None:
            s = method.decode("latin-1")
            names = _METHODS[method] = (s, _encode_str(s))
        self.method_s, self.method_json = names
        self.url = url
        q = url.find(b"?")
        self.path = url if q < 0 else url[:q]
        self.fields = fields
        self.lc = lc
        self.filter = filter_
        self.hints = hints  # retry hints or an Idempotency-Key: max_retries() has to look
        self.framing = framing  # Content-Length or Transfer-Encoding came
        self.version = version
        self.keep_alive = keep_alive
        self.body = body
        self.t0 = t0  # loop clock, for deadlines (uvloop's is in whole milliseconds)
        self.start = _perf_counter_ns()  # for the measured duration
        self.span = None
        self.trace_pairs = None
        self.attempts = 0
        self.retries = 0
        self.instance = None  # the Instance of the last try
        self.error = None
        self.status = 0
        self.fallback = None
        self.inst = None
        self.task = None
        self.started = False


def _forwarded(call: Call, up, tracing: bool) -> list:
    """The pieces of the client's header fields that go upstream, in order (hop-by-hop fields and
    proxy hints are left out already)."""
    fields = call.fields
    if not call.filter:
        return fields
    drop = set(_connection_tokens(call.lc)) if b"connection" in call.lc else set()
    if up.token is not None:
        drop.add(b"authorization")
    if tracing:
        drop |= TRACE_FIELDS
    if not drop:
        return fields
    return without_fields(fields, drop)


def base_h1(call: Call, up, tracing: bool) -> bytes:
    """The header fields of every try (everything but the request line, Host and what each try adds)."""
    fields = _forwarded(call, up, tracing)
    body = call.body
    if body is not None:
        framing = b"Transfer-Encoding: chunked\r\n" if body.chunked else b"Content-Length: %d\r\n" % body.length
    elif b"content-length" in call.lc:
        framing = b"Content-Length: 0\r\n"
    else:
        return b"".join(fields) + VIA
    return b"".join(fields) + framing + VIA


def request_head(call: Call, inst, base: bytes, token, trace_pairs) -> bytes:
    """One try's HTTP/1.1 head: the request line, Host, ``base``, the token and the span's fields."""
    if token is None and not trace_pairs:
        return b"".join((call.method, b" ", call.url, inst.request_host, base, b"\r\n"))
    parts = [call.method, b" ", call.url, inst.request_host, base]
    if token is not None:
        parts.append(b"Authorization: Bearer " + token.encode() + b"\r\n")
    if trace_pairs:
        for k, v in trace_pairs:
            parts.append(k + b": " + v + b"\r\n")
    parts.append(b"\r\n")
    return b"".join(parts)


def base_h2(call: Call, up, tracing: bool) -> list:
    # RFC 9113 8.2: field names in lower case; 8.2.2: no connection-specific fields (dropped above).
    out = [(name.lower(), value) for name, value in field_pairs(_forwarded(call, up, tracing))]
    body = call.body
    if body is not None:
        if not body.chunked:
            out.append((b"content-length", b"%d" % body.length))
    elif b"content-length" in call.lc:
        out.append((b"content-length", b"0"))
    out.append(VIA_H2)
    return out


def h2_headers(call: Call, inst, base: list, token, trace_pairs, up) -> list:
    """One try's HTTP/2 header list: the pseudo-header fields, ``base``, the token and the span's fields."""
    headers = [(b":method", call.method), (b":scheme", up.scheme), (b":authority", inst.authority_b),
               (b":path", call.url)]
    headers += base
    if token is not None:
        headers.append((b"authorization", b"Bearer " + token.encode()))
    if trace_pairs:
        headers += trace_pairs
    return headers
