"""OpenTelemetry traces as an OTLP/HTTP collector receives them: a real receiver on loopback, the
protobuf decoded with opentelemetry-proto. A request continues its caller's trace and its queries
are its children; a webhook event's every delivery attempt is a span of the trace of the request
that wrote it; with tracing off, no tracer is called at all."""
import functools
import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection, connections
from django.test import Client
from django.utils import timezone
from opentelemetry import trace
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from idp import tracing
from realms.http import outbound
from realms.representation.importer import import_realm
from tests.servers import Receiver
from webhooks import delivery, services
from webhooks.models import Delivery, Message

REPO = Path(__file__).resolve().parents[2]
REALM = {
    "realm": "traced", "enabled": True, "eventsEnabled": True,
    "clients": [{"clientId": "svc", "publicClient": False, "secret": "svc-secret-1", "standardFlowEnabled": False,
                 "serviceAccountsEnabled": True}],
}
TOKEN = "/realms/traced/protocol/openid-connect/token"
CALLER_TRACE, CALLER_SPAN = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"


def spans_of(receiver):
    """Every span the receiver got, as dicts with hex ids, attributes and the service name."""
    found = []
    for request in receiver.requests:
        if request["path"] != "/v1/traces":
            continue
        body = request["body"]
        if request["headers"].get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        export = ExportTraceServiceRequest.FromString(body)
        for resource_spans in export.resource_spans:
            resource = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    attributes = {}
                    for a in span.attributes:
                        value = a.value
                        attributes[a.key] = getattr(value, value.WhichOneof("value"))
                    found.append({"name": span.name, "trace": span.trace_id.hex(), "id": span.span_id.hex(),
                                  "parent": span.parent_span_id.hex(), "kind": span.kind, "attributes": attributes,
                                  "service": resource.get("service.name"), "error": span.status.code == 2})
    return found


@functools.cache
def _process_collector():
    receiver = Receiver("127.0.0.1")
    receiver.provider = tracing.provider(endpoint=receiver.url(""), ratio=1.0)
    trace.set_tracer_provider(receiver.provider)
    tracing.install_hooks()
    return receiver


@pytest.fixture
def collector():
    """The process's tracer provider, exporting to a loopback receiver: one for the whole run, by
    every module that uses it (the OpenTelemetry API takes its provider once)."""
    return _process_collector()


@pytest.fixture
def traced(collector, settings, fresh_caches):
    """Tracing on, this test's connection wrapped as a new one would be; spans of earlier tests gone."""
    settings.IDP_TRACING_ENABLED = True
    collector.provider.force_flush()
    with collector.lock:
        collector.requests.clear()
    tracing._trace_connection(None, connection)
    yield collector
    connection.execute_wrappers.remove(tracing.query_span)


def flushed(collector):
    collector.provider.force_flush()
    return spans_of(collector)


def grant(**headers):
    return Client().post(TOKEN, {"grant_type": "client_credentials"}, HTTP_AUTHORIZATION=(
        "Basic c3ZjOnN2Yy1zZWNyZXQtMQ=="), **headers)  # svc:svc-secret-1


@pytest.mark.django_db
def test_a_request_continues_its_callers_trace_and_its_queries_are_its_children(traced):
    import_realm(REALM)
    response = grant(HTTP_TRACEPARENT=f"00-{CALLER_TRACE}-{CALLER_SPAN}-01")
    assert response.status_code == 200
    spans = flushed(traced)
    [server] = [s for s in spans if s["kind"] == trace.SpanKind.SERVER.value + 1]  # proto kinds count from 1
    assert server["name"] == "POST /realms/<str:realm>/protocol/openid-connect/token"
    assert (server["trace"], server["parent"]) == (CALLER_TRACE, CALLER_SPAN)
    assert server["attributes"]["http.route"] == "/realms/<str:realm>/protocol/openid-connect/token"
    assert server["attributes"]["http.response.status_code"] == 200
    assert server["attributes"]["realm"] == "traced" and server["service"] == "idp"
    # The import before the request was in no trace: its queries are no spans.
    queries = [s for s in spans if "db.query.text" in s["attributes"]]
    assert queries and all(q["parent"] == server["id"] and q["trace"] == CALLER_TRACE for q in queries)
    assert {q["attributes"]["db.system.name"] for q in queries} == {connection.vendor}
    assert any(q["name"] == "SELECT" for q in queries)
    # Statements without their parameters: the client's secret is in no span.
    assert not any("svc-secret-1" in str(s["attributes"]) for s in spans)


@pytest.mark.django_db
def test_a_new_connection_gets_the_query_wrapper(traced):
    other = connections.create_connection("default")
    try:
        other.ensure_connection()
        other.close()
        other.ensure_connection()  # a reconnection: still one wrapper
        assert other.execute_wrappers.count(tracing.query_span) == 1
    finally:
        other.close()


@pytest.mark.django_db
def test_each_delivery_attempt_is_in_the_trace_of_the_request_that_wrote_the_event(
        traced, outbound_loopback, monkeypatch):
    import_realm(REALM)
    receiver = Receiver("127.0.0.1")
    try:
        from realms.models import Realm

        services.create_endpoint(Realm.objects.get(name="traced"), receiver.url(), ["auth.client_login"])
        monkeypatch.setattr("webhooks.dispatch.deliveries", lambda ids: None)
        receiver.script = [(500, {}, b"boom")]
        assert grant().status_code == 200
        d = Delivery.objects.get(message__type="auth.client_login")
        delivery.attempt(d.pk)
        Delivery.objects.filter(pk=d.pk).update(next_attempt_at=timezone.now())
        delivery.attempt(d.pk)
        d.refresh_from_db()
        assert d.state == Delivery.DELIVERED and d.attempts == 2
        spans = flushed(traced)
        [server] = [s for s in spans if s["attributes"].get("http.route")]
        attempts = [s for s in spans if s["name"] == "webhook delivery"]
        assert [a["attributes"]["webhook.attempt"] for a in attempts] == [1, 2]
        assert all((a["trace"], a["parent"]) == (server["trace"], server["id"]) for a in attempts)
        assert [a["error"] for a in attempts] == [True, False]
        assert all(a["attributes"]["webhook.message_id"] == d.message_id for a in attempts)
        # Each attempt's POST is its child, and the receiver was told the trace.
        posts = [s for s in spans if s["name"] == "POST" and s["attributes"].get("server.port") == receiver.port]
        assert sorted(p["parent"] for p in posts) == sorted(a["id"] for a in attempts)
        assert [p["attributes"]["http.response.status_code"] for p in posts] == [500, 200]
        for sent, post in zip(receiver.requests, posts):
            assert sent["headers"]["traceparent"] == f"00-{server['trace']}-{post['id']}-01"
    finally:
        receiver.close()


@pytest.mark.django_db
def test_tracing_off_calls_no_tracer(collector, settings, outbound_loopback, monkeypatch, fresh_caches):
    """Off (the default), a request, its queries, an outbound call and a webhook message reach no
    tracer: every way in to one raises here. The same calls with tracing on do reach one."""
    settings.IDP_TRACING_ENABLED = False
    import_realm(REALM)

    def no_tracer(*args, **kwargs):
        raise AssertionError("a tracer was called with tracing off")

    monkeypatch.setattr(trace, "get_tracer", no_tracer)
    monkeypatch.setattr(trace, "get_current_span", no_tracer)
    receiver = Receiver("127.0.0.1")
    try:
        assert grant().status_code == 200
        other = connections.create_connection("default")
        try:
            other.ensure_connection()
            assert tracing.query_span not in other.execute_wrappers
        finally:
            other.close()
        assert outbound.post(receiver.url(), b"{}").status == 200
        assert "traceparent" not in receiver.requests[0]["headers"]
        from realms.models import Realm
        from webhooks.outbox import publish

        ep, _ = services.create_endpoint(Realm.objects.get(name="traced"), receiver.url(), ["auth.login"])
        message = publish(ep.realm, "auth.login", {"userId": "u"}, endpoints=[ep])
        assert len(message.id) == len(Message().id)  # a random id, no trace in it
        settings.IDP_TRACING_ENABLED = True
        with pytest.raises(AssertionError, match="tracer was called"):
            outbound.post(receiver.url(), b"{}")
        with pytest.raises(AssertionError, match="tracer was called"):
            grant()
    finally:
        receiver.close()


@pytest.mark.django_db
def test_a_celery_task_runs_in_the_trace_that_queued_it(collector, settings, tmp_path):
    """A real worker (``celery -A idp worker``) configured by the environment: the task's span
    continues the trace of the span that queued it (``traceparent`` in the message headers), and
    the task's statements are its children."""
    from idp.celery import app
    from tests.webhooks.workers import start_worker, stop, wait_until

    settings.IDP_TRACING_ENABLED = True
    proc = start_worker(connection.settings_dict["NAME"], tmp_path, beat=False, concurrency=1, extra_env={
        "IDP_TRACING_ENABLED": "true", "IDP_TRACING_ENDPOINT": collector.url(""), "OTEL_BSP_SCHEDULE_DELAY": "100",
        "OTEL_SERVICE_NAME": "worker"})
    try:
        with tracing.tracer().start_as_current_span("queue it") as parent:
            app.send_task("webhooks.sweep")
        ctx = parent.get_span_context()

        def task_spans():
            return [s for s in spans_of(collector) if s["name"] == "run webhooks.sweep"
                    and s["trace"] == f"{ctx.trace_id:032x}"]

        assert wait_until(task_spans, timeout=60), open(proc.log_path).read()
        [task] = task_spans()
        assert task["parent"] == f"{ctx.span_id:016x}" and task["service"] == "worker"
        assert wait_until(lambda: any(s["parent"] == task["id"] and "db.query.text" in s["attributes"]
                                      for s in spans_of(collector)), timeout=10)
    finally:
        stop(proc)


def test_the_sampler_ratio_is_taken(collector):
    """Ratio 0 samples no new trace, ratio 1 every one (``IDP_TRACING_SAMPLER_RATIO``)."""
    for ratio, expected in ((0.0, 0), (1.0, 1)):
        receiver = Receiver("127.0.0.1")
        try:
            provider = tracing.provider(endpoint=receiver.url(""), ratio=ratio)
            provider.get_tracer("test").start_span("one").end()
            provider.force_flush()
            assert len(spans_of(receiver)) == expected
            provider.shutdown()
        finally:
            receiver.close()


@pytest.mark.parametrize(("name", "value", "problem"), [
    ("IDP_TRACING_ENABLED", "yes", "IDP_TRACING_ENABLED: 'yes' is not true or false"),
    ("IDP_TRACING_ENDPOINT", "collector:4318", "IDP_TRACING_ENDPOINT: 'collector:4318' is not an http:// or https://"),
    ("IDP_TRACING_SAMPLER_RATIO", "1.5", "IDP_TRACING_SAMPLER_RATIO: 1.5 is not between 0 and 1"),
    ("IDP_TRACING_SAMPLER_RATIO", "half", "IDP_TRACING_SAMPLER_RATIO: 'half' is not a number"),
    ("IDP_LOG_CONSOLE_OUTPUT", "xml", "IDP_LOG_CONSOLE_OUTPUT: 'xml' is not default or json"),
])
def test_bad_tracing_and_log_settings_are_named(monkeypatch, name, value, problem):
    from idp.config import _setting_problems

    monkeypatch.setenv(name, value)
    assert any(p.startswith(problem) for p in _setting_problems())
    monkeypatch.delenv(name)
    assert not any(p.startswith(name) for p in _setting_problems())


@pytest.mark.parametrize(("name", "value", "problem"), [
    ("IDP_TRACING_ENABLED", "yes", "IDP_TRACING_ENABLED: 'yes' is not true or false"),
    ("IDP_LOG_CONSOLE_OUTPUT", "xml", "IDP_LOG_CONSOLE_OUTPUT: 'xml' is not default or json"),
])
def test_dev_mode_refuses_a_bad_tracing_or_log_setting_in_one_line(tmp_path, name, value, problem):
    """Not taken as "off" without a word: start_dev stops, naming the setting."""
    from tests.idp.test_modes import base_env

    done = subprocess.run([sys.executable, "manage.py", "start_dev"], cwd=REPO, capture_output=True, text=True,
                          timeout=60, env=base_env(DJANGO_SETTINGS_MODULE="idp.settings.dev",
                                                   IDP_VAR_DIR=str(tmp_path), **{name: value}))
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == f"CommandError: {problem}"


def test_the_switch_and_endpoint_reach_a_process_from_the_environment(tmp_path):
    """``IDP_TRACING_ENABLED``/``IDP_TRACING_ENDPOINT`` as an operator sets them: a process of its
    own (a ``manage.py`` command, as every node and worker starts) sends its spans there."""
    receiver = Receiver("127.0.0.1")
    try:
        env = dict(os.environ, DJANGO_SETTINGS_MODULE="idp.settings.dev", IDP_VAR_DIR=str(tmp_path),
                   IDP_TRACING_ENABLED="true", IDP_TRACING_ENDPOINT=receiver.url(""),
                   OTEL_SERVICE_NAME="node-a")
        code = ("import django; django.setup(); from opentelemetry import trace; "
                "trace.get_tracer('t').start_span('from-env').end(); trace.get_tracer_provider().shutdown()")
        subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, check=True, timeout=60)
        assert [(s["name"], s["service"]) for s in spans_of(receiver)] == [("from-env", "node-a")]
    finally:
        receiver.close()
