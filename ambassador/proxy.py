"""The HTTP listener's forwarding: route each call, try upstreams with retries, hand the answer on.

The common call runs without a task: a body already in memory, a pooled HTTP/1.1 connection, a
cached token and an answer that arrives whole and needs no retry go from the client's protocol
callback to the upstream and back in the upstream's callback. Everything else (a connection to
open, a token to fetch, a failed try, a retry, a streamed body, HTTP/2) continues in a task that
runs the general retry loop from where the callbacks left off.

The client's connection and what is written back on it are in ``downstream``; the request and
the head each try sends upstream in ``request``.
"""
from __future__ import annotations

import asyncio

from .breaker import CLOSED
from .config import IDEMPOTENT_METHODS
from .downstream import ClientConn, fail, respond, send_error, stream
from .exchange import ClientGone, ConnectFailure, UpstreamReset
from .request import VIA, Call, base_h1, base_h2, h2_headers, request_head
from .retry import backoff, max_retries
from .telemetry import record

FAILURE_STATUSES = frozenset({502, 503, 504})
_INF = float("inf")
# Where a call handed over by the callbacks resumes in the general loop.
_AFTER_FAILURE, _AFTER_STATUS, _STREAM = 1, 2, 3


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
            send_error(cc, call, 404, "no_route", "no route matches this request", None)
            self._done(call)
            return
        if app.tracing.active:
            call.span, call.trace_pairs = app.tracing.start_span(call, route)
        up = route.up
        cfg = route.cfg
        call.deadline = call.t0 + cfg.timeout
        breaker = up.breaker
        if breaker.state != CLOSED and not breaker.allow():
            route.breaker_rejections.inc()
            fail(call, 503, "circuit_open", f"circuit breaker for upstream {up.name} is open")
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
            call.base = base_h2(call, up, app.tracing.active)
        else:
            if call.filter or call.framing:
                base = call.base = base_h1(call, up, app.tracing.active)
            else:
                base = call.base = b"".join(call.fields) + VIA  # base_h1(), its usual case inlined
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
                            if token is None and call.trace_pairs is None:  # request_head(), its usual case inlined
                                head = b"".join((call.method, b" ", call.url, inst.request_host, base, b"\r\n"))
                            else:
                                head = request_head(call, inst, base, token, call.trace_pairs)
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
        record(self.app, call)
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
        sink = respond(call, ex)
        if sink is not None:
            call.sink = sink
            self._continue(call, _STREAM)
            return
        inst.active -= 1
        call.rt.budget.in_flight -= 1
        self._done(call)

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
                            ex = conn.send(h2_headers(req, inst, base, token, call.trace_pairs, up), body,
                                           head_only)
                        else:
                            ex = conn.send(request_head(req, inst, base, token, call.trace_pairs), body, chunked_body,
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
                            fail(call, 502, "token_unavailable", str(e))
                            return
                        raise
                elif resume == _STREAM:
                    try:
                        await stream(call, ex, call.sink, metrics)
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
                        fail(call, 502, "token_unavailable", str(e))
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
                    sink = respond(call, ex)
                    if sink is not None:
                        await stream(call, ex, sink, metrics)
                except asyncio.CancelledError:
                    ex.abort()
                    raise
                finally:
                    inst.active -= 1
                return
            fail(call, 504 if "timeout" in last_cause else 502
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
