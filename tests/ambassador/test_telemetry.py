"""Metrics on their own port, one JSON access-log line per call, an OpenTelemetry span per call."""
from __future__ import annotations

import json

import requests
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from .helpers import Resp, free_port, metric_value, wait_for


def base(u, **tel):
    return {"upstreams": {"svc": {"instances": [u.addr]}},
            "routes": [{"name": "lookup", "match": {"path_prefix": "/lookup/"}, "upstream": "svc"},
                       {"match": {"path_prefix": "/"}, "upstream": "svc", "retry": {"max": 0}}],
            "telemetry": tel}


def test_prometheus_metrics_on_own_port(upstream, proxy):
    u = upstream("a", handler=lambda req: Resp(503 if "fail" in req.path else 200, b"{}"))
    port = free_port()
    p = proxy(base(u, metrics_port=port))
    for _ in range(3):
        requests.get(p.url + "/lookup/1", timeout=5)
    requests.get(p.url + "/fail", timeout=5)
    text = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    assert metric_value(text, "ambassador_requests_total", route="lookup", upstream="svc", code="200") == 3
    assert metric_value(text, "ambassador_requests_total", code="503") == 1
    assert metric_value(text, "ambassador_request_duration_seconds_count", route="lookup") == 3
    assert metric_value(text, "ambassador_upstream_errors_total", upstream="svc", kind="503") == 1
    assert metric_value(text, "ambassador_breaker_state", upstream="svc") == 0
    for name in ("ambassador_retries_total", "ambassador_timeouts_total", "ambassador_token_refreshes_total"):
        assert f"# TYPE {name} counter" in text
    assert requests.get(f"http://127.0.0.1:{port}/other", timeout=5).status_code == 404


def test_json_access_log_line_per_call(upstream, proxy):
    u = upstream("a")
    p = proxy(base(u))
    for i in range(5):
        requests.get(p.url + f"/lookup/{i}?q=1", timeout=5)
    requests.post(p.url + "/nothing", timeout=5, data=b"x")
    lines = wait_for(lambda: (lambda logged: logged if len(logged) == 6 else None)(p.access_log()))
    first = lines[0]
    assert first["method"] == "GET" and first["path"] == "/lookup/0?q=1" and first["status"] == 200
    assert first["route"] == "lookup" and first["upstream"] == "svc" and first["instance"] == u.addr
    assert first["attempts"] == 1 and first["duration_ms"] >= 0 and first["error"] is None
    assert lines[-1]["method"] == "POST" and lines[-1]["route"] == "/"


def test_span_joins_client_traceparent(upstream, proxy):
    exporter = InMemorySpanExporter()
    u = upstream("a")
    p = proxy(base(u), exporter=exporter)
    trace_id, parent = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
    r = requests.get(p.url + "/lookup/7", headers={"traceparent": f"00-{trace_id}-{parent}-01"}, timeout=5)
    spans = wait_for(lambda: exporter.get_finished_spans())
    span = spans[0]
    assert format(span.context.trace_id, "032x") == trace_id
    assert format(span.parent.span_id, "016x") == parent  # the client's span is the parent
    assert span.attributes["http.response.status_code"] == 200
    assert span.attributes["ambassador.upstream"] == "svc" and span.attributes["ambassador.attempts"] == 1
    # The upstream sees the proxy's span as its parent, in the same trace.
    sent = dict((k.lower(), v) for k, v in r.json()["headers"])["traceparent"]
    assert sent.split("-")[1] == trace_id and sent.split("-")[2] == format(span.context.span_id, "016x")
    assert p.access_log()[-1]["trace_id"] == trace_id


def test_span_starts_a_trace_without_traceparent_and_marks_errors(upstream, proxy):
    exporter = InMemorySpanExporter()
    u = upstream("a")
    u.kill()
    p = proxy(base(u), exporter=exporter)
    requests.get(p.url + "/x", timeout=5)
    span = wait_for(lambda: exporter.get_finished_spans())[0]
    assert span.parent is None
    assert span.attributes["error.type"] == "connect_failure"
    assert span.status.status_code.name == "ERROR"


def test_spans_exported_over_otlp(upstream, proxy):
    received = []
    collector = upstream("otel", handler=lambda req: (received.append(req), Resp(200, b""))[1])
    u = upstream("a")
    p = proxy(base(u, otlp_endpoint=f"http://{collector.addr}"))
    requests.get(p.url + "/lookup/1", headers={"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
                 timeout=5)
    p.app.tracing.provider.force_flush(5000)
    req = wait_for(lambda: received and received[0])
    assert req.path == "/v1/traces" and req.h["content-type"] == "application/x-protobuf"
    assert bytes.fromhex("0af7651916cd43dd8448eb211c80319c") in req.body


def test_no_exporter_forwards_traceparent_untouched(upstream, proxy):
    u = upstream("a")
    p = proxy(base(u))
    tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    got = dict((k.lower(), v) for k, v in requests.get(p.url + "/x", headers={"traceparent": tp},
                                                      timeout=5).json()["headers"])
    assert got["traceparent"] == tp
    assert json.loads(json.dumps(p.access_log()[-1]))["trace_id"] == "0af7651916cd43dd8448eb211c80319c"
