"""The HTTP listener: parse the client's HTTP/1.1, route, forward with retries, stream the answer."""
from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from http import HTTPStatus

import httptools

from .retry import backoff, max_retries
from .upstream import ClientGone, ConnectFailure, UpstreamReset

# RFC 9110 section 7.6.1, plus the pre-standard Keep-Alive/Proxy-Connection and proxy auth fields.
HOP_BY_HOP = frozenset({b"connection", b"keep-alive", b"proxy-connection", b"te", b"transfer-encoding",
                        b"upgrade", b"trailer", b"proxy-authenticate", b"proxy-authorization"})
# Fields the proxy rewrites or consumes itself on the way to the upstream.
REQUEST_DROP = HOP_BY_HOP | {b"host", b"content-length", b"expect", b"x-ambassador-retry",
                             b"x-ambassador-max-retries"}
RESPONSE_DROP = HOP_BY_HOP | {b"content-length"}
FAILURE_STATUSES = frozenset({502, 503, 504})
BODYLESS = frozenset({204, 304})
REPLAY_LIMIT_HIGH = 1 << 20
REPLAY_LIMIT_LOW = 256 << 10
LAST_GOOD_MAX = 256 << 10
VIA = b"Via: 1.1 ambassador\r\n"
VIA_H2 = (b"via", b"1.1 ambassador")  # the protocol received from the client, whatever goes upstream
_encode_str = json.encoder.encode_basestring  # C: a JSON string literal, non-ASCII kept as is
_LOG_LINE = ('{"ts":%.3f,"method":%s,"path":%s,"status":%d,"duration_ms":%.3f,"route":%s,"upstream":%s,'
             '"instance":%s,"attempts":%d,"retries":%d,"error":%s,"fallback":%s,"trace_id":%s}')
_STATUS_LINES: dict = {}
_perf_counter = time.perf_counter


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


class Request:
    __slots__ = ("method", "method_s", "url", "path", "headers", "lc", "version", "keep_alive", "body", "t0", "start")

    def __init__(self, method, url, headers, lc, version, keep_alive, body, t0):
        self.method = method
        self.method_s = method.decode("latin-1")
        self.url = url
        q = url.find(b"?")
        self.path = url if q < 0 else url[:q]
        self.headers = headers
        self.lc = lc
        self.version = version
        self.keep_alive = keep_alive
        self.body = body
        self.t0 = t0  # loop clock, for deadlines (uvloop's is in whole milliseconds)
        self.start = _perf_counter()  # for the measured duration


class ClientConn(asyncio.Protocol):
    """One client connection. Requests (pipelined or not) are answered in order by one task, which
    lives as long as the connection (waiting on a future between requests costs less than a new
    task per request)."""

    def __init__(self, server):
        self.server = server
        self.loop = server.loop
        self.transport = None
        self.parser = httptools.HttpRequestParser(self)
        self.queue: deque[Request] = deque()
        self.task: asyncio.Task | None = None
        self.cur: Request | None = None
        self.url = b""
        self.hdrs: list = []
        self.closed = False
        self.draining = False
        self.upstream_ex = None  # the upstream exchange whose answer is being streamed to us
        self.write_paused = False
        self.waiter: asyncio.Future | None = None  # the task waits here for the next request

    def connection_made(self, transport) -> None:
        self.transport = transport
        self.server.clients.add(self)

    def connection_lost(self, exc) -> None:
        self.closed = True
        self.server.clients.discard(self)
        for req in self.queue:
            if req.body is not None:
                req.body.abort()
        if self.task is not None and not self.task.done():
            self.task.cancel()

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
        except httptools.HttpParserError as e:
            self._reject(400, "bad_request", str(e))

    def _reject(self, status: int, cause: str, detail: str) -> None:
        if not self.queue and not self.closed:
            body = json.dumps({"error": cause, "detail": detail}).encode()
            self.transport.write(_status_line(status) + b"Content-Type: application/json\r\nContent-Length: %d\r\n"
                                 b"Connection: close\r\n\r\n%b" % (len(body), body))
        self.transport.close()
        self.closed = True

    # httptools callbacks
    def on_message_begin(self) -> None:
        self.url = b""
        self.hdrs = []

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        self.hdrs.append((name, value))

    def on_headers_complete(self) -> None:
        p = self.parser
        hdrs = self.hdrs
        lc = {n.lower(): v for n, v in hdrs}
        body = None
        te = lc.get(b"transfer-encoding")
        cl = lc.get(b"content-length")
        if te is not None:
            body = Body(self, self.server.retry_buffer, None, True)
        elif cl is not None and cl.strip() != b"0":
            body = Body(self, self.server.retry_buffer, int(cl), False)
        req = Request(p.get_method(), self.url, hdrs, lc, p.get_http_version(), p.should_keep_alive(), body,
                      self.loop.time())
        if body is not None and lc.get(b"expect", b"").lower() == b"100-continue" and not self.queue:
            self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        self.cur = req
        self.queue.append(req)
        if len(self.queue) > 32:
            self.transport.pause_reading()  # a client pipelining this deep waits for answers
        if self.task is None:
            self.task = self.loop.create_task(self._run())
        elif self.waiter is not None:
            w, self.waiter = self.waiter, None
            if not w.done():
                w.set_result(None)

    def on_body(self, data: bytes) -> None:
        self.cur.body.feed(data)

    def on_message_complete(self) -> None:
        cur = self.cur
        if cur is not None and cur.body is not None:
            cur.body.finish()
        self.cur = None

    async def _run(self) -> None:
        queue = self.queue
        handle = self.server.handle
        while not self.closed:
            if not queue:
                if self.draining:
                    self.closed = True
                    self.transport.close()
                    return
                self.waiter = self.loop.create_future()
                await self.waiter
                continue
            keep = await handle(self, queue[0])
            queue.popleft()
            if not keep or self.closed:
                self.closed = True
                self.transport.close()
                return
            if len(queue) == 32:
                self.transport.resume_reading()

    def wake(self) -> None:
        """Shutdown: an idle connection's task notices ``draining``."""
        w, self.waiter = self.waiter, None
        if w is not None and not w.done():
            w.set_result(None)

    def keeps_alive(self, req: Request) -> bool:
        return req.keep_alive and not self.draining and not self.server.draining


class Sink:
    """Writes the upstream's body to the client as it arrives (no buffering beyond the socket)."""

    __slots__ = ("cc", "chunked", "fut", "cache", "cache_size")

    def __init__(self, cc: ClientConn, chunked: bool, fut: asyncio.Future, cache: list | None):
        self.cc = cc
        self.chunked = chunked
        self.fut = fut
        self.cache = cache
        self.cache_size = 0

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


class CallInfo:
    """What the access log, metrics and span say about one call."""

    __slots__ = ("attempts", "retries", "instance", "error", "status", "fallback")

    def __init__(self):
        self.attempts = 0
        self.retries = 0
        self.instance = None
        self.error = None
        self.status = 0
        self.fallback = None


def _json_str(s) -> str:
    return "null" if s is None else _encode_str(s)


class HTTPProxy:
    """Forwarding logic shared by every client connection; holds a reference to the live runtime."""

    def __init__(self, app):
        self.app = app
        self.loop = app.loop
        self.clients: set[ClientConn] = set()
        self.draining = False
        self.retry_buffer = app.runtime.config.listener.retry_buffer

    def protocol(self) -> ClientConn:
        return ClientConn(self)

    async def handle(self, cc: ClientConn, req: Request) -> bool:
        app = self.app
        rt = app.runtime
        rt.in_flight += 1
        info = CallInfo()
        route = rt.match(req)
        span = None
        trace_pairs = None
        try:
            if route is None:
                info.status = 404
                info.error = "no_route"
                self._send_error(cc, req, 404, "no_route", "no route matches this request", None)
                return cc.keeps_alive(req)
            if app.tracing.active:
                span, trace_pairs = self._start_span(req, route)
            await self._forward(cc, req, route, info, trace_pairs)
            return cc.keeps_alive(req) and info.error not in ("client_gone", "stream_broken")
        except asyncio.CancelledError:
            info.error = info.error or "client_gone"
            info.status = info.status or 499
            raise
        finally:
            rt.in_flight -= 1
            self._record(req, route, info, span)
            if rt.retired and rt.in_flight == 0:
                rt.close()

    def _start_span(self, req: Request, route):
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

    def _record(self, req: Request, route, info: CallInfo, span) -> None:
        app = self.app
        elapsed = _perf_counter() - req.start
        if route is not None:
            route.stats.observe(info.status, elapsed)
        else:
            app.metrics.call_stats("-", "-").observe(info.status, elapsed)
        trace_id = None
        if span is not None:
            from opentelemetry.trace import Status, StatusCode

            span.set_attribute("http.response.status_code", info.status)
            span.set_attribute("ambassador.attempts", info.attempts)
            if info.instance is not None:
                span.set_attribute("server.address", info.instance)
            if info.error:
                span.set_attribute("error.type", info.error)
                span.set_status(Status(StatusCode.ERROR, info.error))
            trace_id = format(span.get_span_context().trace_id, "032x")
            span.end()
        log = app.access_log
        if log.enabled:
            if trace_id is None:
                tp = req.lc.get(b"traceparent")
                if tp is not None and len(tp) >= 35:
                    trace_id = tp[3:35].decode("latin-1")
            # Formatted by hand: a JSON encoder call costs several times this, for a fixed shape.
            log.write_line(_LOG_LINE % (
                time.time(), _encode_str(req.method_s), _encode_str(req.url.decode("latin-1")), info.status,
                elapsed * 1000, route.name_json if route is not None else '"-"',
                route.up.name_json if route is not None else '"-"', _json_str(info.instance), info.attempts,
                info.retries, _json_str(info.error), _json_str(info.fallback), _json_str(trace_id)))

    async def _forward(self, cc: ClientConn, req: Request, route, info: CallInfo, trace_pairs) -> None:
        up = route.up
        app = self.app
        metrics = app.metrics
        loop = self.loop
        deadline = req.t0 + route.cfg.timeout
        per_try = route.cfg.per_try_timeout
        breaker = up.breaker
        if not breaker.allow():
            route.breaker_rejections.inc()
            self._fail(cc, req, route, info, 503, "circuit_open",
                       f"circuit breaker for upstream {up.name} is open")
            return
        retry_cfg = route.cfg.retry
        allowed_retries = max_retries(retry_cfg, req.method_s, req.lc)
        budget = app.runtime.budget
        budget.in_flight += 1
        budget_held = 0
        tried: list = []
        token_retry_done = False
        stale_retry_done = False
        retry_no = 0
        body = req.body
        head_only = req.method == b"HEAD"
        http2 = up.http2
        base = self._base_h2(req, up) if http2 else self._base_h1(req, up)
        chunked_body = body is not None and body.chunked
        last_cause, last_detail = "no_instances", f"upstream {up.name} has no instances"
        first = True
        try:
            while True:
                if not first and not breaker.allow():
                    break  # the breaker opened meanwhile: answer with the failure that we saw
                first = False
                inst = up.balancer.pick(tried)
                if inst is None:
                    breaker.release_probe()
                    break
                info.attempts += 1
                info.instance = inst.key
                tried.append(inst)
                inst.active += 1
                ex = None
                token = None
                kind = None
                try_deadline = min(deadline, loop.time() + per_try)
                try:
                    # The common case (a pooled connection, a cached token) awaits nothing but the
                    # answer, bounded by one timer; only the slow paths pay for a timeout scope.
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
                        ex = conn.send(self._h2_headers(req, inst, base, token, trace_pairs, up), body, head_only)
                    else:
                        ex = conn.send(self._head(req, inst, base, token, trace_pairs), body, chunked_body, head_only)
                    timer = loop.call_at(try_deadline, ex.expire)
                    try:
                        await ex.head
                    finally:
                        timer.cancel()
                except TimeoutError:
                    kind = "timeout"
                    overall = loop.time() >= deadline - 0.0005
                    metrics.timeouts.labels(up.name, "overall" if overall else "per_try").inc()
                    last_cause = "overall_timeout" if overall else "upstream_timeout"
                    last_detail = (f"no answer from {inst.key} within "
                                   f"{(route.cfg.timeout if overall else per_try):g}s")
                except ConnectFailure as e:
                    kind, last_cause, last_detail = "connect-failure", "connect_failure", str(e)
                except (UpstreamReset, ConnectionError) as e:
                    kind, last_cause, last_detail = "reset", "upstream_reset", f"{inst.key}: {e}"
                except ClientGone:
                    info.error = "client_gone"
                    info.status = 499
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
                        self._fail(cc, req, route, info, 502, "token_unavailable", str(e))
                        return
                    raise
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
                                info.retries = retry_no
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
                        self._fail(cc, req, route, info, 502, "token_unavailable", str(e))
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
                            info.retries = retry_no
                            route.retries.inc()
                            await asyncio.sleep(delay)
                            continue
                        metrics.budget_exhausted.labels(up.name).inc()
                try:
                    await self._respond(cc, req, route, info, ex, deadline, head_only)
                finally:
                    inst.active -= 1
                return
            self._fail(cc, req, route, info, 504 if "timeout" in last_cause else 502
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

    def _forwarded(self, req: Request, up):
        """The client's header fields that go upstream, in order (hop-by-hop and proxy hints removed)."""
        conn_tokens = _connection_tokens(req.lc) if b"connection" in req.lc else ()
        strip_auth = up.token is not None
        strip_trace = self.app.tracing.active
        for n, v in req.headers:
            nl = n.lower()
            if nl in REQUEST_DROP or nl in conn_tokens:
                continue
            if strip_auth and nl == b"authorization":
                continue
            if strip_trace and (nl == b"traceparent" or nl == b"tracestate"):
                continue
            yield n, nl, v

    def _base_h1(self, req: Request, up) -> bytes:
        out = []
        for n, _, v in self._forwarded(req, up):
            out.append(n + b": " + v + b"\r\n")
        body = req.body
        if body is not None:
            if body.chunked:
                out.append(b"Transfer-Encoding: chunked\r\n")
            else:
                out.append(b"Content-Length: %d\r\n" % body.length)
        elif b"content-length" in req.lc:
            out.append(b"Content-Length: 0\r\n")
        out.append(VIA)
        return b"".join(out)

    def _head(self, req: Request, inst, base: bytes, token, trace_pairs) -> bytes:
        parts = [req.method, b" ", req.url, b" HTTP/1.1\r\nHost: ", inst.authority_b, b"\r\n", base]
        if token is not None:
            parts.append(b"Authorization: Bearer " + token.encode() + b"\r\n")
        if trace_pairs:
            for k, v in trace_pairs:
                parts.append(k + b": " + v + b"\r\n")
        parts.append(b"\r\n")
        return b"".join(parts)

    def _base_h2(self, req: Request, up) -> list:
        # RFC 9113 8.2: field names in lower case; 8.2.2: no connection-specific fields (dropped above).
        out = [(nl, v) for _, nl, v in self._forwarded(req, up)]
        body = req.body
        if body is not None:
            if not body.chunked:
                out.append((b"content-length", b"%d" % body.length))
        elif b"content-length" in req.lc:
            out.append((b"content-length", b"0"))
        out.append(VIA_H2)
        return out

    def _h2_headers(self, req: Request, inst, base: list, token, trace_pairs, up) -> list:
        headers = [(b":method", req.method), (b":scheme", up.scheme), (b":authority", inst.authority_b),
                   (b":path", req.url)]
        headers += base
        if token is not None:
            headers.append((b"authorization", b"Bearer " + token.encode()))
        if trace_pairs:
            headers += trace_pairs
        return headers

    async def _respond(self, cc: ClientConn, req: Request, route, info: CallInfo, ex, deadline: float,
                       head_only: bool) -> None:
        status = ex.status
        info.status = status
        keep = cc.keeps_alive(req)
        out = [_status_line(status, ex.reason)]
        length = None
        conn_value = None
        drop = RESPONSE_DROP
        for n, v in ex.headers:
            nl = n.lower()
            if nl in drop:
                if nl == b"content-length":
                    length = v
                elif nl == b"connection":
                    conn_value = v
                continue
            out.append(n + b": " + v + b"\r\n")
        if conn_value is not None:
            # Fields the upstream named in Connection are hop-by-hop too (RFC 9110 7.6.1).
            named = _connection_names(conn_value)
            if named:
                out = out[:1] + [line for line in out[1:] if line.split(b":", 1)[0].lower() not in named]
        no_body = head_only or status in BODYLESS or status < 200
        cache = None
        if route.last_good is not None and req.method == b"GET" and status == 200:
            cache = []
        if no_body:
            if length is not None:
                out.append(b"Content-Length: " + length + b"\r\n")
            framing_chunked = False
        elif ex.done:
            # The whole answer is already here: send it in one write with an exact length.
            data = b"".join(ex.pending)
            ex.pending.clear()
            out.append(b"Content-Length: %d\r\n" % len(data))
            if not keep:
                out.append(b"Connection: close\r\n")
            out.append(b"\r\n")
            out.append(data)
            if not cc.closed:
                cc.transport.write(b"".join(out))
            if cache is not None and len(data) <= LAST_GOOD_MAX:
                route.last_good[req.url] = (status, ex.reason, ex.headers, data)
            ex.release()
            return
        elif length is not None:
            out.append(b"Content-Length: " + length + b"\r\n")
            framing_chunked = False
        elif req.version == "1.1":
            out.append(b"Transfer-Encoding: chunked\r\n")
            framing_chunked = True
        else:
            keep = False  # an HTTP/1.0 client reads to the end of the connection
            framing_chunked = False
        if not keep:
            out.append(b"Connection: close\r\n")
            cc.draining = True
        out.append(b"\r\n")
        if not cc.closed:
            cc.transport.write(b"".join(out))
        if no_body:
            if ex.done:
                ex.release()
            else:
                ex.abort()  # HEAD/204/304 bodies never come; do not wait for them
            return
        fut = self.loop.create_future()
        sink = Sink(cc, framing_chunked, fut, cache)
        cc.upstream_ex = ex
        if cc.write_paused:
            ex.pause()
        ex.attach(sink)
        try:
            async with asyncio.timeout_at(deadline):
                await fut
        except TimeoutError:
            info.error = "stream_broken"
            self.app.metrics.timeouts.labels(route.up.name, "overall").inc()
            ex.abort()
            cc.transport.abort()  # the head is out; cutting the connection is the only honest signal
            cc.closed = True
            return
        except (UpstreamReset, ConnectionError):
            info.error = "stream_broken"
            ex.abort()
            cc.transport.abort()
            cc.closed = True
            return
        except asyncio.CancelledError:
            ex.abort()
            raise
        finally:
            cc.upstream_ex = None
        if sink.cache is not None:
            route.last_good[req.url] = (status, ex.reason, ex.headers, b"".join(sink.cache))
        ex.release()

    def _fail(self, cc: ClientConn, req: Request, route, info: CallInfo, status: int, cause: str, detail: str) -> None:
        info.error = cause
        fb = route.cfg.fallback
        if fb is not None and req.method in (b"GET", b"HEAD"):
            if fb.last_good:
                cached = route.last_good.get(req.url)
                if cached is not None:
                    st, reason, headers, data = cached
                    keep = cc.keeps_alive(req)
                    out = [_status_line(st, reason)]
                    for n, v in headers:
                        nl = n.lower()
                        if nl not in RESPONSE_DROP:
                            out.append(b"%b: %b\r\n" % (n, v))
                    out.append(b"Content-Length: %d\r\nx-ambassador-fallback: last_good\r\n" % len(data))
                    if not keep:
                        out.append(b"Connection: close\r\n")
                    out.append(b"\r\n")
                    if not cc.closed:
                        cc.transport.write(b"".join(out) + (b"" if req.method == b"HEAD" else data))
                    info.status = st
                    info.fallback = "last_good"
                    route.fallbacks.inc()
                    return
            else:
                hdrs = [(k.encode(), v.encode()) for k, v in fb.headers] + [(b"x-ambassador-fallback", b"static")]
                self._write_simple(cc, req, fb.status, hdrs, fb.body)
                info.status = fb.status
                info.fallback = "static"
                route.fallbacks.inc()
                return
        info.status = status
        self._send_error(cc, req, status, cause, detail, route.up.name, info.attempts)

    def _send_error(self, cc, req, status, cause, detail, upstream, attempts=0) -> None:
        doc = {"error": cause, "detail": detail}
        if upstream is not None:
            doc["upstream"] = upstream
            doc["attempts"] = attempts
        self._write_simple(cc, req, status, [(b"Content-Type", b"application/json")], json.dumps(doc).encode())

    def _write_simple(self, cc, req, status, headers, body: bytes) -> None:
        if cc.closed:
            return
        out = [_status_line(status)]
        out += [b"%b: %b\r\n" % (n, v) for n, v in headers]
        out.append(b"Content-Length: %d\r\n" % len(body))
        if not cc.keeps_alive(req):
            out.append(b"Connection: close\r\n")
        out.append(b"\r\n")
        if req.method != b"HEAD":
            out.append(body)
        cc.transport.write(b"".join(out))
