"""The HTTP listener: parse the client's HTTP/1.1, route, forward with retries, stream the answer.

The common call runs without a task: a body already in memory, a pooled HTTP/1.1 connection, a
cached token and an answer that arrives whole and needs no retry go from the client's protocol
callback to the upstream and back in the upstream's callback. Everything else (a connection to
open, a token to fetch, a failed try, a retry, a streamed body, HTTP/2) continues in a task that
runs the general retry loop from where the callbacks left off.
"""
from __future__ import annotations

import asyncio
import json
import time
from bisect import bisect_left
from collections import deque
from http import HTTPStatus

import httptools

from .breaker import CLOSED
from .config import IDEMPOTENT_METHODS
from .exchange import HOP_BY_HOP, ClientGone, ConnectFailure, UpstreamReset, field_pairs, without_fields
from .retry import backoff, max_retries
from .telemetry import FRACTIONS, LATENCY_BUCKETS_NS

# Fields the proxy rewrites or consumes itself on the way to the upstream.
REQUEST_DROP = HOP_BY_HOP | {b"host", b"content-length", b"expect", b"x-ambassador-retry",
                             b"x-ambassador-max-retries"}
# Forwarded unless the upstream's token or the proxy's own span replaces them.
REQUEST_REPLACED = frozenset({b"authorization", b"traceparent", b"tracestate"})
TRACE_FIELDS = frozenset({b"traceparent", b"tracestate"})
RETRY_HINTS = frozenset({b"x-ambassador-retry", b"x-ambassador-max-retries", b"idempotency-key"})
FAILURE_STATUSES = frozenset({502, 503, 504})
BODYLESS = frozenset({204, 304})
REPLAY_LIMIT_HIGH = 1 << 20
REPLAY_LIMIT_LOW = 256 << 10
LAST_GOOD_MAX = 256 << 10
VIA = b"Via: 1.1 ambassador\r\n"
VIA_H2 = (b"via", b"1.1 ambassador")  # the protocol received from the client, whatever goes upstream
_encode_str = json.encoder.encode_basestring  # C: a JSON string literal, non-ASCII kept as is
_perf_counter_ns = time.perf_counter_ns
_INF = float("inf")
_NUMBERS = tuple(str(i) for i in range(1000))  # statuses, counts and milliseconds for the access log
_NO_ROUTE_NAMES = '"route":"-","upstream":"-"'
# Where a call handed over by the callbacks resumes in the general loop.
_AFTER_FAILURE, _AFTER_STATUS, _STREAM = 1, 2, 3

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


def _connection_tokens(headers_lc: dict) -> frozenset:
    v = headers_lc.get(b"connection")
    if not v:
        return frozenset()
    return frozenset(t.strip().lower() for t in v.split(b","))


_METHODS: dict = {}  # method -> (str, JSON string); bounded: llhttp accepts only the methods it knows
_LENGTH_LINES: dict = {}  # (length, keep-alive) -> the end of an answer head: answers repeat their sizes


def _length_line(length: int, keep: bool) -> bytes:
    line = (b"Content-Length: %d\r\n\r\n" if keep else b"Content-Length: %d\r\nConnection: close\r\n\r\n") % length
    if len(_LENGTH_LINES) < 4096:
        _LENGTH_LINES[(length, keep)] = line
    return line
_PATHS_JSON: dict = {}


def _path_json(url: bytes) -> str:
    s = _PATHS_JSON[url] = _encode_str(url.decode("latin-1"))
    if len(_PATHS_JSON) > 4096:  # targets come from clients: keep the cache bounded
        _PATHS_JSON.clear()
    return s


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
        self.transport = transport
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


class HTTPProxy:
    """Forwarding logic shared by every client connection; holds a reference to the live runtime."""

    def __init__(self, app):
        self.app = app
        self.loop = app.loop
        self.clients: set[ClientConn] = set()
        self.draining = False
        self.retry_buffer = app.runtime.config.listener.retry_buffer
        # Calls waiting for a response head without a task, and their per-try deadlines. One timer,
        # set for the earliest deadline known when it was armed, checks them (rather than a timer
        # per try): under load it fires about once per per-try timeout.
        self.waiting: dict[Call, float] = {}
        self.tick = None
        self.tick_at = _INF

    def protocol(self) -> ClientConn:
        return ClientConn(self)

    # ------------------------------------------------------------------------------ call lifecycle
    def begin(self, cc: ClientConn, call: Call) -> None:
        app = self.app
        rt = call.rt = app.runtime
        rt.in_flight += 1
        cc.call = call
        route = call.route = rt.match(call)
        if route is None:
            call.status = 404
            call.error = "no_route"
            self._send_error(cc, call, 404, "no_route", "no route matches this request", None)
            self._done(call)
            return
        if app.tracing.active:
            call.span, call.trace_pairs = self._start_span(call, route)
        up = route.up
        cfg = route.cfg
        call.deadline = call.t0 + cfg.timeout
        breaker = up.breaker
        if breaker.state != CLOSED and not breaker.allow():
            route.breaker_rejections.inc()
            self._fail(call, 503, "circuit_open", f"circuit breaker for upstream {up.name} is open")
            self._done(call)
            return
        retry = cfg.retry
        if call.hints:
            call.allowed_retries = max_retries(retry, call.method_s, call.lc)
        else:  # what max_retries() answers without hints, without its lookups
            call.allowed_retries = retry.max if retry.safe or call.method_s in IDEMPOTENT_METHODS else 0
        rt.budget.in_flight += 1
        body = call.body
        if up.http2:
            call.base = self._base_h2(call, up)
        else:
            if call.filter or call.framing:
                base = call.base = self._base_h1(call, up)
            else:
                base = call.base = b"".join(call.fields) + VIA  # _base_h1(), its usual case inlined
            if body is None or body.complete_in_memory():
                source = up.token
                token = None if source is None else source.current()
                if source is None or token is not None:
                    insts = up.balancer.instances
                    inst = call.inst = insts[0] if len(insts) == 1 else up.balancer.pick(())
                    if inst is not None:
                        conn = up.pooled(inst)
                        if conn is not None:
                            # The first try, from this callback: nothing to wait for but the answer.
                            call.attempts = 1
                            call.instance = inst
                            inst.active += 1
                            call.token = token
                            if token is None and call.trace_pairs is None:  # _head(), its usual case inlined
                                head = b"".join((call.method, b" ", call.url, inst.request_host, base, b"\r\n"))
                            else:
                                head = self._head(call, inst, base, token, call.trace_pairs)
                            ex = call.ex = conn.send(head, body, body is not None and body.chunked,
                                                     call.method == b"HEAD")
                            ex.owner = call
                            when = self.loop.time() + cfg.per_try_timeout
                            if when > call.deadline:
                                when = call.deadline
                            self.waiting[call] = when
                            if when < self.tick_at:
                                self._arm(when)
                            return
        self._continue(call, None)

    def _continue(self, call: Call, resume) -> None:
        call.resume = resume
        call.task = self.loop.create_task(self._run(call))

    def _done(self, call: Call) -> None:
        """The call is answered: account for it and let the connection go on."""
        self._close(call)
        cc = call.cc
        cc.finish(call.keep_alive and not cc.draining and not self.draining
                  and call.error not in ("client_gone", "stream_broken"))

    def _keep(self, call: Call) -> bool:
        return call.cc.keeps_alive(call) and call.error not in ("client_gone", "stream_broken")

    def _close(self, call: Call) -> None:
        """Account for a call that ended (counts, the access log; a retired route's last call
        closes it)."""
        rt = call.rt
        rt.in_flight -= 1
        self._record(call)
        if rt.retired and rt.in_flight == 0:
            rt.close()

    def client_lost(self, call: Call) -> None:
        """The client's connection closed while its call was in progress."""
        task = call.task
        if task is not None:
            if call.started:
                task.cancel()
            else:
                # Cancelled before its first step, the coroutine would skip its cleanup; cancelled
                # after it, the cleanup runs where it waits.
                self.loop.call_soon(task.cancel)
            return
        # Waiting for the response head without a task.
        self.waiting.pop(call, None)
        call.error = call.error or "client_gone"
        call.status = call.status or 499
        call.route.up.breaker.release_probe()
        ex = call.ex
        ex.owner = None
        ex.abort()
        call.inst.active -= 1
        call.rt.budget.in_flight -= 1
        self._close(call)

    async def _run(self, call: Call) -> None:
        call.started = True
        keep = False
        try:
            await self._forward(call)
            keep = self._keep(call)
        except asyncio.CancelledError:
            call.error = call.error or "client_gone"
            call.status = call.status or 499
            raise
        finally:
            self._close(call)
        call.cc.finish(keep)

    # ------------------------------------------------------------------- the first try's callbacks
    def _arm(self, when: float) -> None:
        if self.tick is not None:
            self.tick.cancel()
        self.tick_at = when
        self.tick = self.loop.call_at(when, self._tick)

    def _tick(self) -> None:
        self.tick = None
        self.tick_at = _INF
        waiting = self.waiting
        now = self.loop.time() + 0.001  # the loop's timers round to the millisecond
        for call in [c for c, t in waiting.items() if t <= now]:
            del waiting[call]
            self._timed_out(call)
        if waiting:
            self._arm(min(waiting.values()))

    def _timed_out(self, call: Call) -> None:
        call.ex.owner = None
        call.kind = "timeout"
        call.cause, call.detail = self._timeout_cause(call, call.inst)
        self._continue(call, _AFTER_FAILURE)

    def _timeout_cause(self, call: Call, inst) -> tuple[str, str]:
        cfg = call.route.cfg
        overall = self.loop.time() >= call.deadline - 0.0005
        self.app.metrics.timeouts.labels(call.route.up.name, "overall" if overall else "per_try").inc()
        if overall:
            return "overall_timeout", f"no answer from {inst.key} within {cfg.timeout:g}s"
        return "upstream_timeout", f"no answer from {inst.key} within {cfg.per_try_timeout:g}s"

    def try_failed(self, call: Call, exc: BaseException) -> None:
        """The first try's connection broke before the response head."""
        self.waiting.pop(call, None)
        call.kind = "reset"
        call.cause, call.detail = "upstream_reset", f"{call.inst.key}: {exc}"
        self._continue(call, _AFTER_FAILURE)

    def head_arrived(self, call: Call) -> None:
        """The first try's response head is here (and, usually, all of its body)."""
        self.waiting.pop(call, None)
        ex = call.ex
        status = ex.status
        route = call.route
        if (status in route.cfg.retry.on and call.allowed_retries) or (status == 401 and call.token is not None):
            self._continue(call, _AFTER_STATUS)  # maybe a retry: the general loop decides
            return
        up = route.up
        inst = call.inst
        if status in FAILURE_STATUSES:
            up.balancer.failure(inst)
            self.app.metrics.upstream_errors.labels(up.name, str(status)).inc()
            up.breaker.record(False)
        else:
            inst.failures = 0  # Balancer.success(), inlined
            breaker = up.breaker
            if breaker.state == CLOSED and not breaker.failures:
                if breaker.count < breaker.window:  # Breaker.record(True) with no failure in the window
                    breaker.count += 1
            else:
                breaker.record(True)
        sink = self._respond(call, ex)
        if sink is not None:
            call.sink = sink
            self._continue(call, _STREAM)
            return
        inst.active -= 1
        call.rt.budget.in_flight -= 1
        self._done(call)

    # ------------------------------------------------------------------------------ span and record
    def _start_span(self, req: Call, route):
        tracing = self.app.tracing
        carrier = {}
        tp = req.lc.get(b"traceparent")
        if tp is not None:
            carrier["traceparent"] = tp.decode("latin-1")
            ts = req.lc.get(b"tracestate")
            if ts is not None:
                carrier["tracestate"] = ts.decode("latin-1")
        from opentelemetry.trace import SpanKind, set_span_in_context

        ctx = tracing.propagator.extract(carrier) if carrier else None
        span = tracing.tracer.start_span(f"{req.method_s} {route.cfg.name}", context=ctx, kind=SpanKind.CLIENT,
                                         attributes={"http.request.method": req.method_s,
                                                     "url.path": req.path.decode("latin-1"),
                                                     "ambassador.route": route.cfg.name,
                                                     "ambassador.upstream": route.up.name})
        out: dict = {}
        tracing.propagator.inject(out, context=set_span_in_context(span))
        return span, [(k.encode(), v.encode("latin-1")) for k, v in out.items()]

    def _record(self, call: Call) -> None:
        app = self.app
        end = _perf_counter_ns()
        elapsed = end - call.start
        route = call.route
        status = call.status
        if route is not None:
            stats = route.stats  # CallStats.observe(), inlined
            stats.codes[status] += 1
            stats.buckets[bisect_left(LATENCY_BUCKETS_NS, elapsed)] += 1
            stats.sum_ns += elapsed
        else:
            app.metrics.call_stats("-", "-").observe(status, elapsed)
        trace_id = None
        span = call.span
        if span is not None:
            from opentelemetry.trace import Status, StatusCode

            span.set_attribute("http.response.status_code", status)
            span.set_attribute("ambassador.attempts", call.attempts)
            if call.instance is not None:
                span.set_attribute("server.address", call.instance.key)
            if call.error:
                span.set_attribute("error.type", call.error)
                span.set_status(Status(StatusCode.ERROR, call.error))
            trace_id = format(span.get_span_context().trace_id, "032x")
            span.end()
        log = app.access_log
        if log.enabled:
            if trace_id is None and call.filter:  # filter: an Authorization or trace field came
                tp = call.lc.get(b"traceparent")
                if tp is not None and len(tp) >= 35:
                    trace_id = tp[3:35].decode("latin-1")
            if not log.scheduled:
                log.start_batch()
            ms = (end + log.offset_ns) // 1_000_000
            ts = log.ts if ms == log.ts_ms else log.stamp(ms)
            path = _PATHS_JSON.get(call.url)
            if path is None:
                path = _path_json(call.url)
            us = elapsed // 1000
            whole_ms = us // 1000
            duration = _NUMBERS[whole_ms] if whole_ms < 1000 else str(whole_ms)
            inst = call.instance
            error = call.error
            fallback = call.fallback
            # f-strings with the constant parts compiled in: %-formatting scans its template and a
            # JSON encoder builds a dict first, each several times the cost for a fixed shape. The
            # usual call (one try, nothing went wrong) has a shorter one.
            if call.attempts == 1 and error is None and fallback is None and trace_id is None:
                line = (f'{{"ts":{ts},"method":{call.method_json},"path":{path},"status":{_NUMBERS[status]},'
                        f'"duration_ms":{duration}{FRACTIONS[us % 1000]},{route.log_names},"instance":{inst.key_json},'
                        f'"attempts":1,"retries":0,"error":null,"fallback":null,"trace_id":null}}')
            else:
                line = (
                    f'{{"ts":{ts},"method":{call.method_json},"path":{path},"status":{_NUMBERS[status]},'
                    f'"duration_ms":{duration}{FRACTIONS[us % 1000]},'
                    f'{_NO_ROUTE_NAMES if route is None else route.log_names},'
                    f'"instance":{"null" if inst is None else inst.key_json},"attempts":{_NUMBERS[call.attempts]},'
                    f'"retries":{_NUMBERS[call.retries]},"error":{"null" if error is None else _encode_str(error)},'
                    f'"fallback":{"null" if fallback is None else _encode_str(fallback)},'
                    f'"trace_id":{"null" if trace_id is None else _encode_str(trace_id)}}}')
            log.buf.append(line)
            log.size += len(line)
            if log.size > 65536:
                log.write_out()

    # ------------------------------------------------------------------------- the general loop
    async def _forward(self, call: Call) -> None:
        """Tries until one answer can go to the client, or the tries, the budget or the time run out.
        Resumes where the callbacks handed the call over (``call.resume``)."""
        req = call
        route = call.route
        up = route.up
        metrics = self.app.metrics
        loop = self.loop
        deadline = call.deadline
        per_try = route.cfg.per_try_timeout
        breaker = up.breaker
        retry_cfg = route.cfg.retry
        allowed_retries = call.allowed_retries
        budget = call.rt.budget
        budget_held = 0
        token_retry_done = False
        stale_retry_done = False
        retry_no = 0
        body = req.body
        head_only = req.method == b"HEAD"
        http2 = up.http2
        base = call.base
        chunked_body = body is not None and body.chunked
        last_cause, last_detail = "no_instances", f"upstream {up.name} has no instances"
        resume = call.resume
        if resume is None:
            tried: list = []
            first = True
            preselected = call.inst  # picked by begin(), which found no idle connection to it
            inst = ex = token = None
        else:
            inst, ex, token = call.inst, call.ex, call.token
            tried = [inst]
            first = False
            preselected = None
        try:
            while True:
                if resume is None:
                    if not first and not breaker.allow():
                        break  # the breaker opened meanwhile: answer with the failure that we saw
                    first = False
                    if preselected is not None:
                        inst, preselected = preselected, None
                    else:
                        inst = up.balancer.pick(tried)
                    if inst is None:
                        breaker.release_probe()
                        break
                    call.attempts += 1
                    call.instance = call.inst = inst
                    tried.append(inst)
                    inst.active += 1
                    ex = None
                    token = None
                    kind = None
                    try_deadline = min(deadline, loop.time() + per_try)
                    try:
                        # A pooled connection and a cached token await nothing but the answer,
                        # bounded by one timer; only the slow paths pay for a timeout scope.
                        conn = up.pooled(inst)
                        if conn is None:
                            async with asyncio.timeout_at(try_deadline):
                                conn = await up.acquire(inst)
                        if up.token is not None:
                            token = up.token.current()
                            if token is None:
                                async with asyncio.timeout_at(try_deadline):
                                    token = await up.token.get()
                        if http2:
                            ex = conn.send(self._h2_headers(req, inst, base, token, call.trace_pairs, up), body,
                                           head_only)
                        else:
                            ex = conn.send(self._head(req, inst, base, token, call.trace_pairs), body, chunked_body,
                                           head_only)
                        timer = loop.call_at(try_deadline, ex.expire)
                        try:
                            await ex.wait_head()
                        finally:
                            timer.cancel()
                    except TimeoutError:
                        kind = "timeout"
                        last_cause, last_detail = self._timeout_cause(call, inst)
                    except ConnectFailure as e:
                        kind, last_cause, last_detail = "connect-failure", "connect_failure", str(e)
                    except (UpstreamReset, ConnectionError) as e:
                        kind, last_cause, last_detail = "reset", "upstream_reset", f"{inst.key}: {e}"
                    except ClientGone:
                        call.error = "client_gone"
                        call.status = 499
                        breaker.release_probe()
                        if ex is not None:
                            ex.abort()
                        inst.active -= 1
                        return
                    except asyncio.CancelledError:
                        # The client went away: give up the exchange so it does not hold a connection.
                        breaker.release_probe()
                        if ex is not None:
                            ex.abort()
                        inst.active -= 1
                        raise
                    except Exception as e:  # token endpoint failures and the like: not the instance's fault
                        from .tokens import TokenError

                        if ex is not None:
                            ex.abort()
                        inst.active -= 1
                        breaker.release_probe()
                        if isinstance(e, TokenError):
                            self._fail(call, 502, "token_unavailable", str(e))
                            return
                        raise
                elif resume == _STREAM:
                    try:
                        await self._stream(call, ex, call.sink)
                    except asyncio.CancelledError:
                        ex.abort()
                        raise
                    finally:
                        inst.active -= 1
                    return
                else:
                    # The callbacks saw this try end: a failure (kind set) or a status to judge.
                    kind = call.kind if resume == _AFTER_FAILURE else None
                    if kind is not None:
                        last_cause, last_detail = call.cause, call.detail
                    resume = None
                if kind is not None:
                    inst.active -= 1
                    if ex is not None:
                        ex.abort()
                    if kind == "reset" and ex is not None and ex.reused and not ex.received \
                            and not stale_retry_done \
                            and (body is None or body.replayable) and (allowed_retries > 0 or retry_cfg.safe):
                        # A pooled connection the upstream had already closed: the request never
                        # reached it, so try once more on a fresh connection at no cost.
                        stale_retry_done = True
                        tried.pop()
                        first = True
                        continue
                    metrics.upstream_errors.labels(up.name, kind).inc()
                    up.balancer.failure(inst)
                    breaker.record(False)
                    if kind in retry_cfg.on and retry_no < allowed_retries:
                        delay = self._retry_delay(route, retry_no, body, deadline)
                        if delay is not None:
                            if budget.try_acquire():
                                budget_held += 1
                                retry_no += 1
                                call.retries = retry_no
                                route.retries.inc()
                                await asyncio.sleep(delay)
                                continue
                            metrics.budget_exhausted.labels(up.name).inc()
                    break
                status = ex.status
                if status == 401 and token is not None and not token_retry_done \
                        and (body is None or body.replayable):
                    # The upstream refused our token: renew it once and replay once.
                    token_retry_done = True
                    inst.active -= 1
                    ex.abort()
                    breaker.record(True)
                    tried.pop()
                    first = True
                    try:
                        async with asyncio.timeout_at(deadline):
                            await up.token.refresh_after_rejection(token)
                    except TimeoutError:
                        last_cause, last_detail = "overall_timeout", "token renewal did not finish in time"
                        break
                    except Exception as e:
                        self._fail(call, 502, "token_unavailable", str(e))
                        return
                    continue
                failed = status in FAILURE_STATUSES
                if failed:
                    up.balancer.failure(inst)
                    metrics.upstream_errors.labels(up.name, str(status)).inc()
                else:
                    up.balancer.success(inst)
                breaker.record(not failed)
                if status in retry_cfg.on and retry_no < allowed_retries:
                    delay = self._retry_delay(route, retry_no, body, deadline)
                    if delay is not None:
                        if budget.try_acquire():
                            inst.active -= 1
                            ex.abort()
                            budget_held += 1
                            retry_no += 1
                            call.retries = retry_no
                            route.retries.inc()
                            await asyncio.sleep(delay)
                            continue
                        metrics.budget_exhausted.labels(up.name).inc()
                try:
                    sink = self._respond(call, ex)
                    if sink is not None:
                        await self._stream(call, ex, sink)
                except asyncio.CancelledError:
                    ex.abort()
                    raise
                finally:
                    inst.active -= 1
                return
            self._fail(call, 504 if "timeout" in last_cause else 502
                       if last_cause != "circuit_open" else 503, last_cause, last_detail)
        finally:
            budget.in_flight -= 1
            for _ in range(budget_held):
                budget.release()

    def _retry_delay(self, route, retry_no: int, body, deadline: float) -> float | None:
        if body is not None and not body.replayable:
            return None
        delay = backoff(route.cfg.retry, retry_no)
        # A retry needs time left for itself after the backoff; otherwise answer now.
        if self.loop.time() + delay + 0.001 >= deadline:
            return None
        return delay


    # ------------------------------------------------------------------------------ request head
    def _forwarded(self, call: Call, up) -> list:
        """The pieces of the client's header fields that go upstream, in order (hop-by-hop fields and
        proxy hints are left out already)."""
        fields = call.fields
        if not call.filter:
            return fields
        drop = set(_connection_tokens(call.lc)) if b"connection" in call.lc else set()
        if up.token is not None:
            drop.add(b"authorization")
        if self.app.tracing.active:
            drop |= TRACE_FIELDS
        if not drop:
            return fields
        return without_fields(fields, drop)

    def _base_h1(self, call: Call, up) -> bytes:
        """The header fields of every try (everything but the request line, Host and what each try adds)."""
        fields = self._forwarded(call, up)
        body = call.body
        if body is not None:
            framing = b"Transfer-Encoding: chunked\r\n" if body.chunked else b"Content-Length: %d\r\n" % body.length
        elif b"content-length" in call.lc:
            framing = b"Content-Length: 0\r\n"
        else:
            return b"".join(fields) + VIA
        return b"".join(fields) + framing + VIA

    def _head(self, call: Call, inst, base: bytes, token, trace_pairs) -> bytes:
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

    def _base_h2(self, call: Call, up) -> list:
        # RFC 9113 8.2: field names in lower case; 8.2.2: no connection-specific fields (dropped above).
        out = [(name.lower(), value) for name, value in field_pairs(self._forwarded(call, up))]
        body = call.body
        if body is not None:
            if not body.chunked:
                out.append((b"content-length", b"%d" % body.length))
        elif b"content-length" in call.lc:
            out.append((b"content-length", b"0"))
        out.append(VIA_H2)
        return out

    def _h2_headers(self, call: Call, inst, base: list, token, trace_pairs, up) -> list:
        headers = [(b":method", call.method), (b":scheme", up.scheme), (b":authority", inst.authority_b),
                   (b":path", call.url)]
        headers += base
        if token is not None:
            headers.append((b"authorization", b"Bearer " + token.encode()))
        if trace_pairs:
            headers += trace_pairs
        return headers

    # ----------------------------------------------------------------------------------- answer
    def _respond(self, call: Call, ex) -> Sink | None:
        """Sends the answer's head, and its body when it is all here (one write, exact length).
        Returns the sink to stream the rest through, or None when the answer is complete."""
        cc = call.cc
        route = call.route
        status = ex.status
        call.status = status
        keep = call.keep_alive and not cc.draining and not self.draining  # ClientConn.keeps_alive, inlined
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
        sink = Sink(cc, framing_chunked, self.loop.create_future(), cache, head_fields)
        cc.upstream_ex = ex
        if cc.write_paused:
            ex.pause()
        ex.attach(sink)
        return sink

    async def _stream(self, call: Call, ex, sink: Sink) -> None:
        """Waits until the answer's body has gone through ``sink``, within the overall timeout."""
        cc = call.cc
        try:
            async with asyncio.timeout_at(call.deadline):
                await sink.fut
        except TimeoutError:
            call.error = "stream_broken"
            self.app.metrics.timeouts.labels(call.route.up.name, "overall").inc()
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

    def _fail(self, call: Call, status: int, cause: str, detail: str) -> None:
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
                self._write_simple(cc, call, fb.status, hdrs, fb.body)
                call.status = fb.status
                call.fallback = "static"
                route.fallbacks.inc()
                return
        call.status = status
        self._send_error(cc, call, status, cause, detail, route.up.name, call.attempts)

    def _send_error(self, cc, call, status, cause, detail, upstream, attempts=0) -> None:
        doc = {"error": cause, "detail": detail}
        if upstream is not None:
            doc["upstream"] = upstream
            doc["attempts"] = attempts
        self._write_simple(cc, call, status, [(b"Content-Type", b"application/json")], json.dumps(doc).encode())

    def _write_simple(self, cc, call, status, headers, body: bytes) -> None:
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
