"""The client's side of the HTTP listener: one HTTP/1.1 connection per client, whose requests
httptools parses into Calls (each header field sorted once by its name: forwarded, dropped, or
taken as a retry hint) answered in order; and everything written back on it: an upstream's
answer (in one write when it is whole, else streamed through a Sink), the route's fallback, or
the proxy's own JSON error.
"""
from __future__ import annotations

import asyncio
import json
from collections import deque
from http import HTTPStatus

import httptools

from .corked import CorkedTransport, cork_for
from .exchange import HOP_BY_HOP, UpstreamReset, without_fields
from .request import Body, Call

# Fields the proxy rewrites or consumes itself on the way to the upstream.
REQUEST_DROP = HOP_BY_HOP | {b"host", b"content-length", b"expect", b"x-ambassador-retry",
                             b"x-ambassador-max-retries"}
# Forwarded unless the upstream's token or the proxy's own span replaces them.
REQUEST_REPLACED = frozenset({b"authorization", b"traceparent", b"tracestate"})
RETRY_HINTS = frozenset({b"x-ambassador-retry", b"x-ambassador-max-retries", b"idempotency-key"})
BODYLESS = frozenset({204, 304})
LAST_GOOD_MAX = 256 << 10

# What to do with a request header field, by its name as received (cached: clients send the same
# names every time).
FORWARD, DROP, CONNECTION, REPLACED, HINT, FORWARDED_HINT, FRAMING = range(7)
_REQUEST_FIELDS: dict = {}
_request_field = _REQUEST_FIELDS.get


def request_field(name: bytes) -> tuple[bytes, int]:
    nl = name.lower()
    if nl in RETRY_HINTS:
        action = HINT if nl in REQUEST_DROP else FORWARDED_HINT
    elif nl == b"connection":
        action = CONNECTION  # it may name more hop-by-hop fields
    elif nl == b"content-length" or nl == b"transfer-encoding":
        action = FRAMING
    elif nl in REQUEST_DROP:
        action = DROP
    elif nl in REQUEST_REPLACED:
        action = REPLACED
    else:
        action = FORWARD
    field = (nl, action)
    if len(_REQUEST_FIELDS) < 1024:  # names come from clients: keep the cache bounded
        _REQUEST_FIELDS[name] = field
    return field


_STATUS_LINES: dict = {}


def _status_line(status: int, reason: bytes = b"") -> bytes:
    line = _STATUS_LINES.get((status, reason))
    if line is not None:
        return line
    phrase = reason
    if not phrase:
        try:
            phrase = HTTPStatus(status).phrase.encode()
        except ValueError:
            phrase = b"Unknown"
    line = b"HTTP/1.1 %d %b\r\n" % (status, phrase)
    if len(_STATUS_LINES) < 512:  # reasons come from upstreams: keep the cache bounded
        _STATUS_LINES[(status, reason)] = line
    return line


_CONNECTION_NAMES: dict = {}


def _connection_names(value: bytes) -> frozenset:
    """The fields a Connection header names besides keep-alive/close (already dropped): usually none."""
    names = _CONNECTION_NAMES.get(value)
    if names is None:
        names = frozenset(t.strip().lower() for t in value.split(b",")) - {b"keep-alive", b"close", b""}
        if len(_CONNECTION_NAMES) < 256:
            _CONNECTION_NAMES[value] = names
    return names


_LENGTH_LINES: dict = {}  # (length, keep-alive) -> the end of an answer head: answers repeat their sizes


def _length_line(length: int, keep: bool) -> bytes:
    line = (b"Content-Length: %d\r\n\r\n" if keep else b"Content-Length: %d\r\nConnection: close\r\n\r\n") % length
    if len(_LENGTH_LINES) < 4096:
        _LENGTH_LINES[(length, keep)] = line
    return line


class ClientConn(asyncio.Protocol):
    """One client connection. Requests (pipelined or not) are answered in order: the next one starts
    when the call answering the previous one finishes."""

    def __init__(self, server):
        self.server = server
        self.loop = server.loop
        self.transport = None
        self.parser = httptools.HttpRequestParser(self)
        self.queue: deque[Call] = deque()
        self.call: Call | None = None  # the call answering queue[0]
        self.cur: Call | None = None  # the call whose request body is being received
        self.url = b""
        self.fields: list = []
        self.lc: dict = {}
        self.filter = False
        self.hints = False
        self.framing = False  # Content-Length or Transfer-Encoding seen
        self.closed = False
        self.draining = False
        self.dispatching = False
        self.upstream_ex = None  # the upstream exchange whose answer is being streamed to us
        self.write_paused = False

    def connection_made(self, transport) -> None:
        self.transport = CorkedTransport(transport, cork_for(self.loop))
        self.server.clients.add(self)

    def connection_lost(self, exc) -> None:
        self.closed = True
        self.server.clients.discard(self)
        for call in self.queue:
            if call.body is not None:
                call.body.abort()
        call = self.call
        if call is not None:
            self.call = None
            self.server.client_lost(call)

    def pause_writing(self) -> None:
        self.write_paused = True
        if self.upstream_ex is not None:
            self.upstream_ex.pause()

    def resume_writing(self) -> None:
        self.write_paused = False
        if self.upstream_ex is not None:
            self.upstream_ex.resume()

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._reject(501, "upgrade_not_supported", "protocol upgrades are not proxied")
            return
        except httptools.HttpParserError as e:
            self._reject(400, "bad_request", str(e))
            return
        # Started once the whole packet is parsed, so a small body that came with its head is complete.
        if self.call is None and self.queue:
            self.next()

    def _reject(self, status: int, cause: str, detail: str) -> None:
        if not self.queue and not self.closed:
            body = json.dumps({"error": cause, "detail": detail}).encode()
            self.transport.write(_status_line(status) + b"Content-Type: application/json\r\nContent-Length: %d\r\n"
                                 b"Connection: close\r\n\r\n%b" % (len(body), body))
        self.transport.close()
        self.closed = True

    # httptools callbacks
    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        field = _request_field(name)
        if field is None:
            field = request_field(name)
        nl, action = field
        self.lc[nl] = value
        if action == FORWARD:
            self.fields += (name, b": ", value, b"\r\n")
        elif action == REPLACED:
            self.filter = True
            self.fields += (name, b": ", value, b"\r\n")
        elif action == CONNECTION:
            self.filter = True
        elif action == HINT:
            self.hints = True
        elif action == FORWARDED_HINT:
            self.hints = True
            self.fields += (name, b": ", value, b"\r\n")
        elif action == FRAMING:
            self.framing = True

    def on_headers_complete(self) -> None:
        p = self.parser
        lc = self.lc
        body = None
        framing = self.framing
        if framing:
            te = lc.get(b"transfer-encoding")
            cl = lc.get(b"content-length")
            if te is not None:
                body = Body(self, self.server.retry_buffer, None, True)
            elif cl is not None and cl.strip() != b"0":
                body = Body(self, self.server.retry_buffer, int(cl), False)
        keep_alive = p.should_keep_alive()
        # Only HTTP/1.1 keeps a connection alive without saying so; get_http_version() formats a
        # string, so it is asked only when the answer is not already known.
        version = "1.1" if keep_alive and not (self.filter and b"connection" in lc) else p.get_http_version()
        call = Call(self, p.get_method(), self.url, self.fields, lc, self.filter, self.hints, framing, version,
                    keep_alive, body, self.loop.time())
        self.url = b""
        self.fields = []
        self.lc = {}
        self.filter = self.hints = self.framing = False
        if body is not None and lc.get(b"expect", b"").lower() == b"100-continue" and not self.queue:
            self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        self.cur = call
        self.queue.append(call)
        if len(self.queue) > 32:
            self.transport.pause_reading()  # a client pipelining this deep waits for answers

    def on_body(self, data: bytes) -> None:
        self.cur.body.feed(data)

    def on_message_complete(self) -> None:
        cur = self.cur
        if cur is not None and cur.body is not None:
            cur.body.finish()
        self.cur = None

    def next(self) -> None:
        """Start answering the request at the head of the queue (and the following ones, as long as
        they finish at once)."""
        if self.dispatching:
            return  # a call finished inside begin(): the loop below goes on
        self.dispatching = True
        queue = self.queue
        begin = self.server.begin
        try:
            while queue and self.call is None and not self.closed:
                begin(self, queue[0])
        finally:
            self.dispatching = False

    def finish(self, keep: bool) -> None:
        """The call answering queue[0] is over."""
        self.call = None
        queue = self.queue
        queue.popleft()
        if not keep or self.closed:
            self.closed = True
            self.transport.close()
            return
        if len(queue) == 32:
            self.transport.resume_reading()
        if queue:
            self.next()
        elif self.draining:
            self.closed = True
            self.transport.close()

    def keeps_alive(self, call: Call) -> bool:
        return call.keep_alive and not self.draining and not self.server.draining


class Sink:
    """Writes the upstream's body to the client as it arrives (no buffering beyond the socket)."""

    __slots__ = ("cc", "chunked", "fut", "cache", "cache_size", "fields")

    def __init__(self, cc: ClientConn, chunked: bool, fut: asyncio.Future, cache: list | None, fields: bytes):
        self.cc = cc
        self.chunked = chunked
        self.fut = fut
        self.cache = cache
        self.cache_size = 0
        self.fields = fields  # the answer's header fields, for the last-good cache

    def data(self, chunk: bytes) -> None:
        if not self.cc.closed:
            if self.chunked:
                self.cc.transport.write(b"%x\r\n%b\r\n" % (len(chunk), chunk))
            else:
                self.cc.transport.write(chunk)
        if self.cache is not None:
            self.cache_size += len(chunk)
            if self.cache_size > LAST_GOOD_MAX:
                self.cache = None
            else:
                self.cache.append(chunk)

    def end(self) -> None:
        if self.chunked and not self.cc.closed:
            self.cc.transport.write(b"0\r\n\r\n")
        if not self.fut.done():
            self.fut.set_result(None)

    def fail(self, exc: BaseException) -> None:
        if not self.fut.done():
            self.fut.set_exception(exc)


def respond(call: Call, ex) -> Sink | None:
    """Sends the answer's head, and its body when it is all here (one write, exact length).
    Returns the sink to stream the rest through, or None when the answer is complete."""
    cc = call.cc
    route = call.route
    status = ex.status
    call.status = status
    keep = call.keep_alive and not cc.draining and not cc.server.draining  # ClientConn.keeps_alive, inlined
    fields = ex.fields
    if ex.conn_value is not None:
        # Fields the upstream named in Connection are hop-by-hop too (RFC 9110 7.6.1).
        named = _connection_names(ex.conn_value)
        if named:
            fields = without_fields(fields, named)
    status_line = _STATUS_LINES.get((status, ex.reason)) or _status_line(status, ex.reason)
    no_body = call.method == b"HEAD" or status in BODYLESS or status < 200
    length = ex.length
    if no_body:
        framing = b"" if length is None else b"Content-Length: " + length + b"\r\n"
        framing_chunked = False
    elif ex.done:
        # The whole answer is already here: send it in one write with an exact length.
        pending = ex.pending
        data = pending[0] if len(pending) == 1 else b"".join(pending)
        size = len(data)
        fields.insert(0, status_line)
        fields.append(_LENGTH_LINES.get((size, keep)) or _length_line(size, keep))
        fields.append(data)
        if not cc.closed:
            cc.transport.write(b"".join(fields))
        if route.last_good is not None and call.method == b"GET" and status == 200 and size <= LAST_GOOD_MAX:
            route.last_good[call.url] = (status, ex.reason, b"".join(fields[1:-2]), data)
        ex.release()
        return None
    elif length is not None:
        framing = b"Content-Length: " + length + b"\r\n"
        framing_chunked = False
    elif call.version == "1.1":
        framing = b"Transfer-Encoding: chunked\r\n"
        framing_chunked = True
    else:
        keep = False  # an HTTP/1.0 client reads to the end of the connection
        framing = b""
        framing_chunked = False
    if not keep:
        framing += b"Connection: close\r\n"
        cc.draining = True
    head_fields = b"".join(fields)
    if not cc.closed:
        cc.transport.write(b"%b%b%b\r\n" % (status_line, head_fields, framing))
    if no_body:
        if ex.done:
            ex.release()
        else:
            ex.abort()  # HEAD/204/304 bodies never come; do not wait for them
        return None
    cache = [] if route.last_good is not None and call.method == b"GET" and status == 200 else None
    sink = Sink(cc, framing_chunked, cc.loop.create_future(), cache, head_fields)
    cc.upstream_ex = ex
    if cc.write_paused:
        ex.pause()
    ex.attach(sink)
    return sink


async def stream(call: Call, ex, sink: Sink, metrics) -> None:
    """Waits until the answer's body has gone through ``sink``, within the overall timeout."""
    cc = call.cc
    try:
        async with asyncio.timeout_at(call.deadline):
            await sink.fut
    except TimeoutError:
        call.error = "stream_broken"
        metrics.timeouts.labels(call.route.up.name, "overall").inc()
        ex.abort()
        cc.transport.abort()  # the head is out; cutting the connection is the only honest signal
        cc.closed = True
        return
    except (UpstreamReset, ConnectionError):
        call.error = "stream_broken"
        ex.abort()
        cc.transport.abort()
        cc.closed = True
        return
    finally:
        cc.upstream_ex = None
    if sink.cache is not None:
        call.route.last_good[call.url] = (ex.status, ex.reason, sink.fields, b"".join(sink.cache))
    ex.release()


def fail(call: Call, status: int, cause: str, detail: str) -> None:
    """Answers a call no upstream answered: with the route's fallback for GET and HEAD when it has one,
    else with the proxy's JSON error."""
    cc = call.cc
    route = call.route
    call.error = cause
    fb = route.cfg.fallback
    if fb is not None and call.method in (b"GET", b"HEAD"):
        if fb.last_good:
            cached = route.last_good.get(call.url)
            if cached is not None:
                st, reason, head_fields, data = cached
                if not cc.closed:
                    cc.transport.write(b"%b%bContent-Length: %d\r\nx-ambassador-fallback: last_good\r\n%b\r\n%b" % (
                        _status_line(st, reason), head_fields, len(data),
                        b"" if cc.keeps_alive(call) else b"Connection: close\r\n",
                        b"" if call.method == b"HEAD" else data))
                call.status = st
                call.fallback = "last_good"
                route.fallbacks.inc()
                return
        else:
            hdrs = [(k.encode(), v.encode()) for k, v in fb.headers] + [(b"x-ambassador-fallback", b"static")]
            _write_simple(cc, call, fb.status, hdrs, fb.body)
            call.status = fb.status
            call.fallback = "static"
            route.fallbacks.inc()
            return
    call.status = status
    send_error(cc, call, status, cause, detail, route.up.name, call.attempts)


def send_error(cc, call, status, cause, detail, upstream, attempts=0) -> None:
    doc = {"error": cause, "detail": detail}
    if upstream is not None:
        doc["upstream"] = upstream
        doc["attempts"] = attempts
    _write_simple(cc, call, status, [(b"Content-Type", b"application/json")], json.dumps(doc).encode())


def _write_simple(cc, call, status, headers, body: bytes) -> None:
    if cc.closed:
        return
    out = [_status_line(status)]
    out += [b"%b: %b\r\n" % (n, v) for n, v in headers]
    out.append(b"Content-Length: %d\r\n" % len(body))
    if not cc.keeps_alive(call):
        out.append(b"Connection: close\r\n")
    out.append(b"\r\n")
    if call.method != b"HEAD":
        out.append(body)
    cc.transport.write(b"".join(out))
