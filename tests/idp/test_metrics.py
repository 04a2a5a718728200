"""/metrics of a production node with two workers, read after real traffic: the figures of the
workers that served the requests, summed across them (prometheus_client's multiprocess mode)."""
import json
import os
import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from idp.metrics import Exposition
from tests.servers import Receiver

from .test_modes import base_env, free_port, manage, production_database, stop, wait_for
from .test_tracing import spans_of

REALM = {
    "realm": "metrics", "enabled": True,
    "clients": [{"clientId": "svc", "publicClient": False, "secret": "svc-secret-1", "standardFlowEnabled": False,
                 "serviceAccountsEnabled": True}],
}
GRANTS, FAILED = 20, 5


def samples(text):
    return [sample for family in text_string_to_metric_families(text) for sample in family.samples]


def total(found, name, **labels):
    return sum(s.value for s in found if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()))


def test_metrics_add_up_across_two_workers(production_database, tmp_path):
    """Traced too: the spans of the workers' requests reach an OTLP/HTTP receiver."""
    http, mgmt = free_port(), free_port()
    collector = Receiver("127.0.0.1")
    env = base_env(
        DJANGO_SETTINGS_MODULE="idp.settings.prod", IDP_HOSTNAME="127.0.0.1",
        IDP_BASE_URL=f"http://127.0.0.1:{http}", IDP_SECRET_KEY="m" * 50,
        IDP_DB_URL=production_database, IDP_REDIS_URL=os.environ["IDP_TEST_REDIS_URL"], IDP_VAR_DIR=str(tmp_path),
        IDP_TRACING_ENABLED="true", IDP_TRACING_ENDPOINT=collector.url(""), OTEL_BSP_SCHEDULE_DELAY="100",
    )
    proc = manage("start", "--http-port", str(http), "--management-port", str(mgmt),
                  "--bind", "127.0.0.1", "--workers", "2", env=env)
    try:
        wait_for(f"http://127.0.0.1:{mgmt}/health/ready", deadline_s=90, proc=proc)
        (tmp_path / "realm.json").write_text(json.dumps(REALM))
        imported = manage("import_realm", str(tmp_path / "realm.json"), env=env)
        out, _ = imported.communicate(timeout=120)
        assert imported.returncode == 0, out
        token_url = f"http://127.0.0.1:{http}/realms/metrics/protocol/openid-connect/token"

        def grant(secret):
            # A connection of its own each: the two workers' listeners share them out.
            return requests.post(token_url, data={"grant_type": "client_credentials"},
                                 auth=("svc", secret), timeout=30).status_code

        with ThreadPoolExecutor(8) as pool:
            codes = list(pool.map(grant, ["svc-secret-1"] * GRANTS + ["wrong"] * FAILED))
        assert codes == [200] * GRANTS + [401] * FAILED
        found = samples(requests.get(f"http://127.0.0.1:{mgmt}/metrics", timeout=10).text)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and len(token_spans(collector)) < GRANTS + FAILED:
            time.sleep(0.2)
        spans = spans_of(collector)
    finally:
        stop(proc)
        collector.close()
    log = proc.stdout.read()
    assert "Traceback" not in log, log

    # Keycloak's user event metric: the sign-ins of the service account and their failures.
    assert total(found, "keycloak_user_events_total", realm="metrics", client_id="svc", event="client_login",
                 error="") == GRANTS
    failed = [s for s in found if s.name == "keycloak_user_events_total" and s.labels["event"] == "client_login"
              and s.labels["error"]]
    assert sum(s.value for s in failed) == FAILED and {s.labels["realm"] for s in failed} == {"metrics"}
    # Request durations by route and status, never by raw path.
    assert total(found, "http_server_requests_seconds_count", method="POST", route="oidc-token", status="200") == GRANTS
    assert total(found, "http_server_requests_seconds_count", method="POST", route="oidc-token", status="401") == FAILED
    assert total(found, "http_server_requests_seconds_bucket", route="oidc-token", status="200", le="+Inf") == GRANTS
    assert not any("/realms/" in value for s in found for value in s.labels.values())
    # The process figures of both workers, beside those of the main process.
    workers = {s.labels["pid"] for s in found if s.name == "idp_worker_process_cpu_seconds_total"}
    assert len(workers) == 2 and str(proc.pid) not in workers
    assert total(found, "idp_worker_process_resident_memory_bytes") > 0
    assert any(s.name == "process_resident_memory_bytes" for s in found)
    # Both workers served some of the traffic, and the counts above are their sum.
    files = {path.stem.rsplit("_", 1)[1] for path in (tmp_path / "metrics" / str(mgmt)).glob("histogram_*.db")}
    # (The main process's own: the statements of its start-up, migrations included.)
    assert workers <= files <= workers | {str(proc.pid)}, (files, workers)
    # The database: connections the workers opened (Keycloak's Agroal name) and every statement timed.
    assert total(found, "agroal_creation_count_total", datasource="default") >= 2
    assert total(found, "idp_db_query_seconds_count", datasource="default") >= GRANTS + FAILED
    assert total(found, "idp_db_query_seconds_bucket", datasource="default", le="+Inf") == total(
        found, "idp_db_query_seconds_count", datasource="default")
    # The per-process copies: the first look-up of each worker missed, most of the rest hit.
    assert total(found, "idp_local_cache_lookups_total", result="miss") >= 2
    assert total(found, "idp_local_cache_lookups_total", result="hit") > total(
        found, "idp_local_cache_lookups_total", result="miss")
    # The webhook sender's queue and outcomes are on the same page (nothing queued here).
    assert total(found, "idp_webhook_sender_queue_depth", state="pending") == 0
    assert {s.labels["outcome"] for s in found if s.name == "idp_webhook_delivery_attempts_total"} == {
        "delivered", "retry", "failed"}

    # The Grafana dashboard queries nothing this node does not export.
    missing = dashboard_metrics() - {s.name for s in found}
    assert not missing, missing

    # Every request a span, sent by the worker that served it, its queries its children.
    served = token_spans(collector)
    assert sorted(s["attributes"]["http.response.status_code"] for s in served) == [200] * GRANTS + [401] * FAILED
    assert {s["service"] for s in served} == {"idp"} and len({s["trace"] for s in served}) == GRANTS + FAILED
    ids = {s["id"] for s in served}
    assert any(s["parent"] in ids and "db.query.text" in s["attributes"] for s in spans)


DASHBOARD = Path(__file__).resolve().parents[2] / "docs" / "observability" / "grafana-dashboard.json"
PROMQL_WORDS = {"by", "without"}  # functions are told by their parenthesis


def dashboard_metrics():
    """The series names the dashboard's queries read (label matchers, groupings and ranges removed)."""
    names = set()
    for panel in json.loads(DASHBOARD.read_text())["panels"]:
        for target in panel.get("targets", []):
            expr = re.sub(r"\{[^}]*\}|\[[^]]*\]|by \([^)]*\)", " ", target["expr"])
            names.update(m.group() for m in re.finditer(r"[a-zA-Z_:][a-zA-Z0-9_:]*", expr)
                         if m.group() not in PROMQL_WORDS and not expr[m.end():].lstrip().startswith("("))
    return names


def test_the_dashboard_s_names_are_read_from_its_queries():
    names = dashboard_metrics()
    assert {"http_server_requests_seconds_bucket", "keycloak_user_events_total", "idp_db_query_seconds_sum",
            "agroal_creation_count_total", "idp_webhook_sender_lag_seconds"} <= names
    assert not names & {"realm", "route", "datasource", "rate", "sum", "$__rate_interval"}


def token_spans(collector):
    return [s for s in spans_of(collector) if s["name"] == "POST /realms/<str:realm>/protocol/openid-connect/token"]


@pytest.mark.django_db
def test_user_events_are_counted_as_keycloak_names_them(django_capture_on_commit_callbacks):
    """One process (start_dev, this test): the same families from the metric objects themselves.
    ``event`` is Keycloak's lower-case type without ``_error``; a client id the caller made up is
    no label."""
    from realms.audit.events import emit
    from realms.representation.services import create_realm

    realm = create_realm("counted")
    with django_capture_on_commit_callbacks(execute=True):
        emit(realm, "LOGIN_ERROR", client_id="app", error="invalid_user_credentials",
             details={"identity_provider": "github"})
        emit(realm, "CLIENT_LOGIN_ERROR", client_id="made-up-by-the-caller", error="client_not_found")
        emit(realm, "CODE_TO_TOKEN", client_id="app")
    found = samples(generate_latest(Exposition()).decode())
    assert total(found, "keycloak_user_events_total", realm="counted", client_id="app", event="login",
                 error="invalid_user_credentials", idp="github") == 1
    assert total(found, "keycloak_user_events_total", realm="counted", client_id="", event="client_login",
                 error="client_not_found") == 1
    assert total(found, "keycloak_user_events_total", realm="counted", client_id="app", event="code_to_token",
                 error="", idp="") == 1
    assert not any("made-up" in value for s in found for value in s.labels.values())


@pytest.mark.django_db
def test_webhook_delivery_outcomes_and_queue(outbound_loopback, monkeypatch, fresh_caches):
    """Attempts against a real receiver counted by outcome, the queue read at the scrape."""
    from django.utils import timezone

    from realms.representation.services import create_realm
    from webhooks import delivery, services
    from webhooks.models import Delivery
    from webhooks.outbox import publish

    def attempts(outcome):
        return total(samples(generate_latest(Exposition()).decode()), "idp_webhook_delivery_attempts_total",
                     outcome=outcome)

    before = {o: attempts(o) for o in ("delivered", "retry", "failed")}
    monkeypatch.setattr("webhooks.dispatch.deliveries", lambda ids: None)
    receiver = Receiver("127.0.0.1")
    try:
        endpoint, _ = services.create_endpoint(create_realm("hooked"), receiver.url(), ["auth.login"])
        receiver.script = [(500, {}, b"boom")]
        d = Delivery.objects.get(message=publish(endpoint.realm, "auth.login", {"userId": "u"}, endpoints=[endpoint]))
        found = samples(generate_latest(Exposition()).decode())
        assert total(found, "idp_webhook_sender_queue_depth", state="pending") == 1
        assert 0 <= total(found, "idp_webhook_sender_lag_seconds") < 60
        delivery.attempt(d.pk)
        assert attempts("retry") == before["retry"] + 1 and attempts("delivered") == before["delivered"]
        Delivery.objects.filter(pk=d.pk).update(next_attempt_at=timezone.now())
        delivery.attempt(d.pk)
    finally:
        receiver.close()
    found = samples(generate_latest(Exposition()).decode())
    assert total(found, "idp_webhook_delivery_attempts_total", outcome="delivered") == before["delivered"] + 1
    assert total(found, "idp_webhook_delivery_attempts_total", outcome="failed") == before["failed"]
    assert total(found, "idp_webhook_sender_queue_depth", state="pending") == 0
