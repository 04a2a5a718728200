"""OpenTelemetry traces, off unless ``IDP_TRACING_ENABLED`` (Keycloak's ``tracing-enabled``).

On, spans leave by OTLP over HTTP (protobuf) for ``IDP_TRACING_ENDPOINT`` (Keycloak's
``tracing-endpoint``; unset: the standard ``OTEL_EXPORTER_OTLP_*`` variables, else
``http://localhost:4318``), new traces sampled at ``IDP_TRACING_SAMPLER_RATIO`` (Keycloak's
``tracing-sampler-ratio``; a span with a parent follows its parent), the node named by
``OTEL_SERVICE_NAME`` (default ``idp``) and ``OTEL_RESOURCE_ATTRIBUTES``. The spans:

- one per request (``TracingMiddleware``), a W3C ``traceparent`` of the caller continued;
- one per database query in a trace (``query_span``, a wrapper of every connection opened), the
  statement without its parameters;
- one per outbound call (``realms.http.outbound``), which passes ``traceparent`` on;
- one per Celery task, in the trace that queued it (context in the message headers);
- one per webhook delivery attempt, in the trace of the change that wrote the event
  (``webhooks.delivery``).

Off, nothing of this is on the hot path: the middleware removes itself, neither the query
wrapper nor the Celery hooks are installed, and the lower layers read one boolean setting before
any tracer call (decision 0095)."""
import os

from celery import signals
from django.conf import settings
from django.core.exceptions import MiddlewareNotUsed
from django.db.backends.signals import connection_created
from opentelemetry import context, propagate, trace
from opentelemetry.trace import SpanKind, Status, StatusCode

MAX_STATEMENT = 2000  # characters of a query's text kept on its span


def provider(endpoint=None, ratio=None):
    """A tracer provider exporting in batches by OTLP/HTTP, from the settings unless given."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

    endpoint = settings.IDP_TRACING_ENDPOINT if endpoint is None else endpoint
    ratio = settings.IDP_TRACING_SAMPLER_RATIO if ratio is None else ratio
    ratio = min(max(ratio, 0.0), 1.0)  # out of range: named by the configuration check, not a traceback
    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME") or "idp"})
    result = TracerProvider(resource=resource, sampler=ParentBased(TraceIdRatioBased(ratio)))
    # No endpoint: the exporter reads OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / OTEL_EXPORTER_OTLP_ENDPOINT.
    exporter = OTLPSpanExporter(endpoint=f"{endpoint.rstrip('/')}/v1/traces" if endpoint else None)
    # The batch processor's thread is started again in each forked worker (the SDK's at-fork hook).
    result.add_span_processor(BatchSpanProcessor(exporter))
    return result


def setup():
    """Called from ``IdpConfig.ready``: with tracing on, the process's tracer provider and the
    hooks that need one (queries, Celery); nothing otherwise."""
    if not settings.IDP_TRACING_ENABLED:
        return
    trace.set_tracer_provider(provider())
    install_hooks()


def install_hooks():
    connection_created.connect(_trace_connection, dispatch_uid="idp.tracing")
    signals.before_task_publish.connect(_inject_task_headers, dispatch_uid="idp.tracing")
    signals.task_prerun.connect(_task_started, dispatch_uid="idp.tracing")
    signals.task_postrun.connect(_task_ended, dispatch_uid="idp.tracing")


def tracer():
    return trace.get_tracer("idp")


class TracingMiddleware:
    """Right after the request timer: a server span per request, named by its route."""

    def __init__(self, get_response):
        if not settings.IDP_TRACING_ENABLED:
            raise MiddlewareNotUsed
        self.get_response = get_response

    def __call__(self, request):
        parent = propagate.extract(request.headers)
        with tracer().start_as_current_span(request.method, context=parent, kind=SpanKind.SERVER,
                                            attributes={"http.request.method": request.method}) as span:
            response = self.get_response(request)
            match = getattr(request, "resolver_match", None)
            if match is not None:
                # The URL pattern, never the raw path (which may carry codes or tokens).
                span.update_name(f"{request.method} /{match.route}")
                span.set_attribute("http.route", f"/{match.route}")
                realm = match.kwargs.get("realm") or match.kwargs.get("realm_name")
                if realm:
                    span.set_attribute("realm", realm)
            span.set_attribute("http.response.status_code", response.status_code)
            if response.status_code >= 500:
                span.set_status(Status(StatusCode.ERROR))
            return response


# The hooks below are connected only with tracing on; they read the switch again so that a
# process that turns it off (a test) is left as one that never had it.
def _trace_connection(sender, connection, **kwargs):
    # Sent at every (re)connection of the same wrapper object: once is enough.
    if settings.IDP_TRACING_ENABLED and query_span not in connection.execute_wrappers:
        connection.execute_wrappers.append(query_span)


def query_span(execute, sql, params, many, ctx):
    """A client span per query in a trace (a request, a task, a delivery): the statement's text,
    never its parameters. Queries outside one (health checks, start-up) would each be a trace."""
    if not trace.get_current_span().get_span_context().is_valid:
        return execute(sql, params, many, ctx)
    connection = ctx["connection"]
    operation = sql.lstrip().split(None, 1)[0].upper() if sql.strip() else "QUERY"
    with tracer().start_as_current_span(operation, kind=SpanKind.CLIENT, attributes={
            "db.system.name": connection.vendor, "db.namespace": connection.alias,
            "db.operation.name": operation, "db.query.text": sql[:MAX_STATEMENT]}):
        return execute(sql, params, many, ctx)


# Celery: the publisher's context in the message headers, a consumer span around the task.
_task_spans = {}  # task id -> (span, context token)


def _inject_task_headers(headers=None, **kwargs):
    if settings.IDP_TRACING_ENABLED and headers is not None:
        propagate.inject(headers)


class _RequestGetter:
    """Celery sets unknown message headers as attributes of ``task.request``."""

    def get(self, carrier, key):
        value = getattr(carrier, key, None)
        return [value] if isinstance(value, str) else None

    def keys(self, carrier):
        return []


def _task_started(task_id=None, task=None, **kwargs):
    if not settings.IDP_TRACING_ENABLED:
        return
    parent = propagate.extract(task.request, getter=_RequestGetter())
    span = tracer().start_span(f"run {task.name}", context=parent, kind=SpanKind.CONSUMER,
                               attributes={"messaging.system": "celery", "celery.task_name": task.name})
    _task_spans[task_id] = (span, context.attach(trace.set_span_in_context(span)))


def _task_ended(task_id=None, state=None, **kwargs):
    span, token = _task_spans.pop(task_id, (None, None))
    if span is not None:
        context.detach(token)
        if state == "FAILURE":
            span.set_status(Status(StatusCode.ERROR))
        span.end()
