"""Access-log lines without secrets.

Query strings carry ``id_token_hint`` (logout), ``login_hint``, SAML messages and, in a
referrer, authorization codes: an access log is read by more people than the database. Every
query value is logged as ``REDACTED`` unless its parameter is in ``SHOWN`` (names are kept, so a
log still tells which request it was): the development server's ``django.server`` lines go
through ``RedactQueryFilter``. (Production's access log, Granian's, has no query or referrer.)

``IDP_LOG_CONSOLE_OUTPUT=json`` (Keycloak's ``log-console-output``) writes every line as a JSON
object (``JsonFormatter``) carrying the request's id and, with tracing on, its trace and span ids.
"""
import contextvars
import itertools
import json
import logging
import socket
import uuid
from datetime import UTC, datetime
from urllib.parse import parse_qsl, quote

from django.conf import settings
from django.core.exceptions import MiddlewareNotUsed
from opentelemetry import trace

SHOWN = frozenset({"client_id", "response_type", "response_mode", "scope", "prompt", "tab", "execution",
                   "ui_locales", "kc_locale", "realm__id__exact"})


def redact_target(target):
    """``/path?a=1&b=2`` with every value not in SHOWN replaced."""
    path, sep, query = target.partition("?")
    if not sep:
        return target
    pairs = [f"{quote(name, safe='')}={quote(value, safe='') if name in SHOWN else 'REDACTED'}"
             for name, value in parse_qsl(query, keep_blank_values=True)]
    return f"{path}?{'&'.join(pairs)}"


def redact_request_line(line):
    """``GET /path?query HTTP/1.1`` with its query redacted."""
    method, sep, rest = line.partition(" ")
    target, sep2, version = rest.rpartition(" ")
    if not sep or not sep2:
        return redact_target(line)
    return f"{method} {redact_target(target)} {version}"


class RedactQueryFilter(logging.Filter):
    """For ``django.server``: its request lines are logged as ``'"%s" %s %s', request_line, ...``."""

    def filter(self, record):
        if isinstance(record.args, tuple) and record.args and isinstance(record.args[0], str):
            record.args = (redact_request_line(record.args[0]), *record.args[1:])
        return True


# The request a log line belongs to (JSON logs only): set by RequestContextMiddleware.
request_id = contextvars.ContextVar("idp_request_id", default="")


class RequestContextMiddleware:
    """With JSON logs, a fresh id per request for its lines (removes itself otherwise)."""

    def __init__(self, get_response):
        if settings.IDP_LOG_CONSOLE_OUTPUT != "json":
            raise MiddlewareNotUsed
        self.get_response = get_response

    def __call__(self, request):
        token = request_id.set(uuid.uuid4().hex)
        try:
            return self.get_response(request)
        finally:
            request_id.reset(token)


def granian_log_config():
    """Granian's own loggers (its process lines and access lines, configured by Granian in each
    of its processes, not by Django's LOGGING) in the console format chosen; None: its own."""
    if settings.IDP_LOG_CONSOLE_OUTPUT != "json":
        return None
    return {"formatters": {name: {"()": "idp.logs.JsonFormatter"} for name in ("generic", "access")}}


class JsonFormatter(logging.Formatter):
    """Keycloak's ``log-console-output=json`` shape, one object a line: ``timestamp``, ``sequence``,
    ``loggerName``, ``level``, ``message``, ``threadName``, ``hostName``, ``processId``, the
    exception as ``stackTrace``, and an ``mdc`` with ``requestId`` and, with tracing on,
    ``traceId``/``spanId``/``sampled`` (Quarkus' names) while in a request or a traced task.
    Messages pass the same filters as plain lines (query values redacted)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._sequence = itertools.count(1)
        self._host = socket.gethostname()

    def format(self, record):
        mdc = {}
        if request_id.get():
            mdc["requestId"] = request_id.get()
        span = trace.get_current_span().get_span_context()
        if span.is_valid:
            mdc.update(traceId=f"{span.trace_id:032x}", spanId=f"{span.span_id:016x}",
                       sampled=str(span.trace_flags.sampled).lower())
        line = {
            "timestamp": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "sequence": next(self._sequence), "loggerName": record.name, "level": record.levelname,
            "message": record.getMessage(), "threadName": record.threadName, "threadId": record.thread,
            "mdc": mdc, "hostName": self._host, "processName": record.processName, "processId": record.process,
        }
        if record.exc_info:
            line["stackTrace"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)
