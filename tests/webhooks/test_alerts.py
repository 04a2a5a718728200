"""Receiver alerts (spec 2 §8): signature failures and the age of the oldest queued event, as log
lines and Prometheus metrics (the management server's /metrics reads the default registry; the
counts live in the shared cache and the database, not in the process that took the request)."""
import json
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from prometheus_client import REGISTRY, generate_latest

from webhooks import receiver, signing
from webhooks.models import ReceivedEvent

from . import urls as receiver_urls

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.webhooks.urls")]


def _sample(name, source):
    return REGISTRY.get_sample_value(name, {"receiver": source}) or 0


def test_signature_failures_are_logged_and_counted(caplog):
    before = _sample("idp_webhook_receiver_signature_failures_total", "tests")
    body = json.dumps({"type": "user.created", "data": {}}).encode()
    headers = signing.Signer([signing.generate_secret()]).headers("msg_x", body)  # not the receiver's secret
    resp = Client().post("/hooks/tests", body, content_type="application/json",
                         **{"HTTP_" + k.upper().replace("-", "_"): v for k, v in headers.items()})
    assert resp.status_code == 401
    assert _sample("idp_webhook_receiver_signature_failures_total", "tests") == before + 1
    assert any(r.levelname == "WARNING" and "signature rejected" in r.getMessage() for r in caplog.records)
    good = signing.Signer(receiver_urls.SECRETS).headers("msg_y", body)
    Client().post("/hooks/tests", body, content_type="application/json",
                  **{"HTTP_" + k.upper().replace("-", "_"): v for k, v in good.items()})
    assert _sample("idp_webhook_receiver_signature_failures_total", "tests") == before + 1


def test_old_queued_event_raises_an_alert_and_shows_in_metrics(caplog, settings):
    settings.IDP_WEBHOOK_RECEIVER_QUEUE_AGE_ALERT = 300
    now = timezone.now()
    ReceivedEvent.objects.create(source="billing", event_id="fresh", payload="{}", received_at=now)
    assert receiver.alert_on_queue_age(now) == {}
    ReceivedEvent.objects.create(source="billing", event_id="stuck", payload="{}", received_at=now - timedelta(seconds=400))
    ReceivedEvent.objects.create(source="billing", event_id="dead", payload="{}", status=ReceivedEvent.DEAD)
    assert receiver.alert_on_queue_age(now) == {"billing": pytest.approx(400, abs=1)}
    assert any(r.levelname == "ERROR" and "billing" in r.getMessage() and "400 s old" in r.getMessage()
               for r in caplog.records)
    assert _sample("idp_webhook_receiver_oldest_queued_age_seconds", "billing") >= 399
    assert _sample("idp_webhook_receiver_dead_events", "billing") == 1
    assert b"idp_webhook_receiver_oldest_queued_age_seconds" in generate_latest()
