"""``IDP_LOG_CONSOLE_OUTPUT=json`` (Keycloak's ``log-console-output``): one JSON object a line in
Keycloak's shape, the request's id and, with tracing on, its trace and span ids; secrets no more
logged than in plain lines."""
import io
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client

from idp.logs import JsonFormatter, RedactQueryFilter
from realms.representation.importer import import_realm

from .test_modes import base_env, free_port, manage, production_database, stop, wait_for  # noqa: F401 (a fixture)
from .test_tracing import REALM, collector, flushed, traced  # noqa: F401 (fixtures)

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def json_lines(settings):
    """The ``idp`` loggers' lines as the JSON console handler writes them."""
    settings.IDP_LOG_CONSOLE_OUTPUT = "json"
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("idp")
    logger.addHandler(handler)
    yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    logger.removeHandler(handler)


@pytest.mark.django_db
def test_a_request_s_lines_carry_its_request_trace_and_span_ids(traced, json_lines):  # noqa: F811
    import_realm({**REALM, "eventsListeners": ["jboss-logging"]})
    response = Client().post("/realms/traced/protocol/openid-connect/token", {"grant_type": "client_credentials"},
                             HTTP_AUTHORIZATION="Basic c3ZjOndyb25nLXNlY3JldC14eXo=")  # svc:wrong-secret-xyz
    assert response.status_code == 401
    logging.getLogger("idp.test").info("after the request")
    [event, after] = json_lines()
    assert event["loggerName"] == "idp.events" and event["level"] == "WARNING"
    assert event["message"].startswith("event CLIENT_LOGIN_ERROR realm=traced")
    assert set(event) >= {"timestamp", "sequence", "threadName", "hostName", "processId", "mdc"}
    assert event["timestamp"].endswith("+00:00") and after["sequence"] == event["sequence"] + 1
    [server] = [s for s in flushed(traced) if s["attributes"].get("http.route")]
    mdc = event["mdc"]
    assert len(mdc["requestId"]) == 32 and mdc["traceId"] == server["trace"] and mdc["sampled"] == "true"
    assert len(mdc["spanId"]) == 16
    # Outside a request: no request, no trace.
    assert after["mdc"] == {} and after["message"] == "after the request"
    assert "wrong-secret-xyz" not in json.dumps([event, after])


def test_query_values_are_redacted_and_exceptions_kept():
    formatter = JsonFormatter()
    record = logging.LogRecord("django.server", logging.INFO, __file__, 1, '"%s" %s %s',
                               ("GET /realms/r/callback?code=SECRETCODE&client_id=app HTTP/1.1", "200", "5"), None)
    RedactQueryFilter().filter(record)
    line = json.loads(formatter.format(record))
    assert "SECRETCODE" not in line["message"] and "code=REDACTED" in line["message"]
    assert "client_id=app" in line["message"]
    try:
        raise ValueError("boom")
    except ValueError:
        failed = logging.LogRecord("idp", logging.ERROR, __file__, 1, "failed", (), sys.exc_info())
    line = json.loads(formatter.format(failed))
    assert line["level"] == "ERROR" and "ValueError: boom" in line["stackTrace"]


@pytest.mark.parametrize(("output", "is_json"), [("json", True), ("default", False)])
def test_the_setting_chooses_the_console_format(tmp_path, output, is_json):
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="idp.settings.dev", IDP_VAR_DIR=str(tmp_path),
               IDP_LOG_CONSOLE_OUTPUT=output)
    code = "import django, logging; django.setup(); logging.getLogger('idp.x').warning('hello %s', 'there')"
    err = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, check=True, timeout=60,
                         capture_output=True, text=True).stderr.strip().splitlines()[-1]
    if is_json:
        line = json.loads(err)
        assert (line["message"], line["loggerName"], line["level"]) == ("hello there", "idp.x", "WARNING")
    else:
        assert err.endswith("WARNING idp.x hello there")
        with pytest.raises(ValueError):
            json.loads(err)


@pytest.mark.postgresql
def test_a_production_node_writes_every_line_as_json(production_database, tmp_path):  # noqa: F811
    """Granian's own lines (its start, its workers, the access log) and the start command's advice
    too, not only Django's; no warning printed past the logs."""
    http, mgmt = free_port(), free_port()
    env = base_env(DJANGO_SETTINGS_MODULE="idp.settings.prod", IDP_HOSTNAME="127.0.0.1",
                   IDP_BASE_URL=f"http://127.0.0.1:{http}", IDP_SECRET_KEY="j" * 50, IDP_DB_URL=production_database,
                   IDP_REDIS_URL=os.environ["IDP_TEST_REDIS_URL"], IDP_VAR_DIR=str(tmp_path),
                   IDP_ACCESS_LOG="-", IDP_LOG_CONSOLE_OUTPUT="json")
    proc = manage("start", "--http-port", str(http), "--management-port", str(mgmt), "--bind", "127.0.0.1",
                  "--workers", "1", env=env)
    try:
        wait_for(f"http://127.0.0.1:{mgmt}/health/ready", deadline_s=120, proc=proc)
        wait_for(f"http://127.0.0.1:{http}/realms/master/.well-known/openid-configuration", proc=proc)
    finally:
        stop(proc)
    lines = [line for line in proc.stdout.read().splitlines() if line.strip()]
    parsed = [json.loads(line) for line in lines]  # a plain line fails here
    names = {line["loggerName"] for line in parsed}
    assert {"_granian", "granian.access", "idp.start"} <= names, names  # no admin yet: the advice
    assert any("openid-configuration" in line["message"] for line in parsed if line["loggerName"] == "granian.access")
