"""Metrics (Prometheus, own port), JSON access log, OpenTelemetry spans, and ``record()``, which
accounts for each finished call in all three."""
from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from bisect import bisect_left

from prometheus_client import CollectorRegistry, Counter, Gauge
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.metrics_core import CounterMetricFamily, HistogramMetricFamily

LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
LATENCY_BUCKETS_NS = tuple(round(b * 1e9) for b in LATENCY_BUCKETS)


class CallStats:
    """Calls and their latencies for one (route, upstream): plain integers updated once per call, read
    when /metrics is scraped. prometheus_client's Counter and Histogram take a lock and walk the
    buckets in Python on every update, which cost more than the rest of the bookkeeping of a call.
    Statuses index a list (llhttp and the proxy only produce three-digit ones); durations are
    integer nanoseconds."""

    __slots__ = ("codes", "buckets", "sum_ns")

    def __init__(self):
        self.codes = [0] * 1000
        self.buckets = [0] * (len(LATENCY_BUCKETS) + 1)  # the last one is +Inf
        self.sum_ns = 0

    def observe(self, status: int, elapsed_ns: int) -> None:
        self.codes[status] += 1
        self.buckets[bisect_left(LATENCY_BUCKETS_NS, elapsed_ns)] += 1
        self.sum_ns += elapsed_ns


class CallCollector:
    """Exposes every CallStats as ambassador_requests_total and ambassador_request_duration_seconds."""

    def __init__(self, stats: dict):
        self.stats = stats

    def collect(self):
        requests = CounterMetricFamily("ambassador_requests", "Calls answered to the client",
                                       labels=["route", "upstream", "code"])
        latency = HistogramMetricFamily("ambassador_request_duration_seconds",
                                        "Time from request head to end of response", labels=["route", "upstream"])
        for (route, upstream), st in list(self.stats.items()):
            for code, n in enumerate(list(st.codes)):
                if n:
                    requests.add_metric([route, upstream, str(code)], n)
            cumulative, total = [], 0
            for bound, n in zip((*(repr(b) for b in LATENCY_BUCKETS), "+Inf"), st.buckets):
                total += n
                cumulative.append((bound, total))
            latency.add_metric([route, upstream], cumulative, st.sum_ns / 1e9)
        yield requests
        yield latency


class Metrics:
    def __init__(self):
        r = self.registry = CollectorRegistry()
        self.calls: dict[tuple[str, str], CallStats] = {}
        r.register(CallCollector(self.calls))
        self.upstream_errors = Counter("ambassador_upstream_errors", "Failed tries by cause",
                                       ["upstream", "kind"], registry=r)
        self.timeouts = Counter("ambassador_timeouts", "Timeouts (per_try or overall)", ["upstream", "kind"], registry=r)
        self.retries = Counter("ambassador_retries", "Retries sent", ["route", "upstream"], registry=r)
        self.budget_exhausted = Counter("ambassador_retry_budget_exhausted", "Retries refused by the retry budget",
                                        ["upstream"], registry=r)
        self.breaker_state = Gauge("ambassador_breaker_state", "Circuit breaker: 0 closed, 1 open, 2 half-open",
                                   ["upstream"], registry=r)
        self.breaker_rejections = Counter("ambassador_breaker_rejections", "Calls refused at once by an open breaker",
                                          ["upstream"], registry=r)
        self.token_refreshes = Counter("ambassador_token_refreshes", "Access-token fetches", ["upstream", "outcome"],
                                       registry=r)
        self.ejections = Counter("ambassador_outlier_ejections", "Instances ejected by outlier detection",
                                 ["upstream"], registry=r)
        self.instances = Gauge("ambassador_upstream_instances", "Known instances", ["upstream"], registry=r)
        self.fallbacks = Counter("ambassador_fallbacks", "Fallback answers served", ["route"], registry=r)
        self.stream_connections = Counter("ambassador_stream_connections", "TCP/shard listener connections",
                                          ["listener", "outcome"], registry=r)
        self.tls_reloads = Counter("ambassador_tls_reloads", "TLS material reloaded", ["upstream"], registry=r)

    def call_stats(self, route: str, upstream: str) -> CallStats:
        """The counters of one route; kept across configuration reloads."""
        st = self.calls.get((route, upstream))
        if st is None:
            st = self.calls[(route, upstream)] = CallStats()
        return st

    def render(self) -> bytes:
        return generate_latest(self.registry)


async def serve_metrics(metrics: Metrics, host: str, port: int) -> asyncio.AbstractServer:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(5):
                line = await reader.readline()
                while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                    pass
            path = line.split()[1] if len(line.split()) > 1 else b"/"
            if path.split(b"?")[0] == b"/metrics":
                body, status, ctype = metrics.render(), "200 OK", CONTENT_TYPE_LATEST
            else:
                body, status, ctype = b"not found\n", "404 Not Found", "text/plain"
            writer.write(f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
                         "Connection: close\r\n\r\n".encode() + body)
            await writer.drain()
        except (OSError, TimeoutError):
            pass
        finally:
            writer.close()

    return await asyncio.start_server(handle, host, port)


FRACTIONS = tuple(".%03d" % i for i in range(1000))
_encode_str = json.encoder.encode_basestring  # C: a JSON string literal, non-ASCII kept as is
_perf_counter_ns = time.perf_counter_ns
_NUMBERS = tuple(str(i) for i in range(1000))  # statuses, counts and milliseconds for the access log
_NO_ROUTE_NAMES = '"route":"-","upstream":"-"'
_PATHS_JSON: dict = {}


def _path_json(url: bytes) -> str:
    s = _PATHS_JSON[url] = _encode_str(url.decode("latin-1"))
    if len(_PATHS_JSON) > 4096:  # targets come from clients: keep the cache bounded
        _PATHS_JSON.clear()
    return s


class AccessLog:
    """One JSON line per call. Lines are batched and written every 50 ms (or at 64 KiB) so a busy
    proxy does not pay a write system call per request.

    The proxy formats the lines itself (see ``record()``), calls ``start_batch()`` before the
    first line of a batch, appends each line to ``buf`` (adding its length to ``size``) and calls
    ``write_out()`` past 64 KiB. It stamps lines with the wall clock derived from the perf counter it
    already read: ``offset_ns`` is taken again at the start of every batch, and the text of the
    current millisecond is kept (``ts_ms``, ``ts``)."""

    def __init__(self, target: str | None):
        self.fd = None
        self.own = False
        if target == "stdout":
            self.fd = sys.stdout.fileno()
        elif target == "stderr":
            self.fd = sys.stderr.fileno()
        elif target:
            self.fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o640)
            self.own = True
        self.enabled = self.fd is not None
        self.buf: list[str] = []
        self.size = 0
        self.scheduled = False
        self.offset_ns = 0
        self.ts_ms = -1
        self.ts = ""

    def start_batch(self) -> None:
        """Before the first line of a batch: read the wall clock, write the batch in 50 ms."""
        self.scheduled = True
        self.offset_ns = time.time_ns() - time.perf_counter_ns()
        asyncio.get_running_loop().call_later(0.05, self.flush)

    def stamp(self, ms: int) -> str:
        """``ts`` for a wall-clock time in milliseconds: seconds with three decimals."""
        self.ts_ms = ms
        ts = self.ts = f"{ms // 1000}{FRACTIONS[ms % 1000]}"
        return ts

    def flush(self) -> None:
        self.scheduled = False
        self.write_out()

    def write_out(self) -> None:
        if not self.buf or self.fd is None:
            return
        data = ("\n".join(self.buf) + "\n").encode()
        self.buf.clear()
        self.size = 0
        view = memoryview(data)
        while view:
            try:
                n = os.write(self.fd, view)
            except BlockingIOError:
                continue
            view = view[n:]

    def close(self) -> None:
        self.flush()
        if self.own and self.fd is not None:
            os.close(self.fd)
        self.fd = None
        self.enabled = False


class Tracing:
    """An OpenTelemetry tracer with the configured exporters. Spans are only created when something
    will receive them (an OTLP endpoint, or a processor added by an embedding program or a test);
    otherwise the client's ``traceparent`` is forwarded untouched."""

    def __init__(self, service_name: str, otlp_endpoint: str | None, enabled: bool = True):
        from opentelemetry.propagators.textmap import DefaultGetter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        self.enabled = enabled
        self.active = False
        self.provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
        self.tracer = self.provider.get_tracer("ambassador")
        self.propagator = TraceContextTextMapPropagator()
        self.getter = DefaultGetter()
        if enabled and otlp_endpoint:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.trace.export import BatchSpanProcessor

            endpoint = otlp_endpoint.rstrip("/")
            if not endpoint.endswith("/v1/traces"):
                endpoint += "/v1/traces"
            self.add_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))

    def add_processor(self, processor) -> None:
        self.provider.add_span_processor(processor)
        self.active = self.enabled

    def shutdown(self) -> None:
        self.provider.shutdown()

    def start_span(self, req, route):
        """A client span for a call, and the trace fields that carry it upstream."""
        carrier = {}
        tp = req.lc.get(b"traceparent")
        if tp is not None:
            carrier["traceparent"] = tp.decode("latin-1")
            ts = req.lc.get(b"tracestate")
            if ts is not None:
                carrier["tracestate"] = ts.decode("latin-1")
        from opentelemetry.trace import SpanKind, set_span_in_context

        ctx = self.propagator.extract(carrier) if carrier else None
        span = self.tracer.start_span(f"{req.method_s} {route.cfg.name}", context=ctx, kind=SpanKind.CLIENT,
                                      attributes={"http.request.method": req.method_s,
                                                  "url.path": req.path.decode("latin-1"),
                                                  "ambassador.route": route.cfg.name,
                                                  "ambassador.upstream": route.up.name})
        out: dict = {}
        self.propagator.inject(out, context=set_span_in_context(span))
        return span, [(k.encode(), v.encode("latin-1")) for k, v in out.items()]


def record(app, call) -> None:
    """Accounts for a call that ended: its route's counters, its span, its access-log line."""
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
