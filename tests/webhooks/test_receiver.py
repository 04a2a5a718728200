"""The reusable receiver: verification before anything, durable store before 2xx, duplicates,
unknown types, handler retries and the dead-letter state."""
import json
import logging
import time
from datetime import UTC, datetime
from datetime import timezone as dt_timezone

import pytest
import standardwebhooks
from django.test import Client

from realms.models import Realm
from webhooks import receiver, signing
from webhooks.models import ReceivedEvent
from webhooks.signing import Signer

from . import urls

pytestmark = [pytest.mark.urls("tests.webhooks.urls"), pytest.mark.django_db]


def _post(client, body, headers, path="/hooks/tests"):
    return client.post(path, data=body, content_type="application/json",
                       **{"HTTP_" + k.upper().replace("-", "_"): v for k, v in headers.items()})


def _event(type_="user.created", id_="42"):
    return json.dumps({"type": type_, "timestamp": "2026-01-01T00:00:00Z", "data": {"id": id_}}).encode()


@pytest.fixture
def client():
    # CSRF checks on, as in production: the receiver must not need a token.
    return Client(enforce_csrf_checks=True)


def test_valid_event_is_stored_before_2xx_and_handled_once(client):
    body = _event(id_="a1")
    headers = Signer(urls.SECRETS).headers("msg_store1", body)
    resp = _post(client, body, headers)
    assert resp.status_code == 204
    stored = ReceivedEvent.objects.get(source="tests", event_id="msg_store1")
    assert stored.status == ReceivedEvent.QUEUED and stored.payload == body.decode()
    receiver.process(stored.pk)
    stored.refresh_from_db()
    assert stored.status == ReceivedEvent.DONE
    assert Realm.objects.filter(name="hook-a1").exists()
    # The sender retries (new timestamp, same id): acknowledged, not stored or handled again.
    again = Signer(urls.SECRETS).headers("msg_store1", body, timestamp=int(time.time()) + 3)
    assert _post(client, body, again).status_code == 200
    assert ReceivedEvent.objects.filter(event_id="msg_store1").count() == 1
    receiver.process(stored.pk)
    assert urls.HANDLED.count("msg_store1") == 1


def test_reference_library_signed_request_is_accepted(client):
    body = _event(id_="ref")
    wh = standardwebhooks.Webhook(urls.SECRETS[0])
    now = datetime.now(tz=UTC)
    headers = {"webhook-id": "msg_ref", "webhook-timestamp": str(int(now.timestamp())),
               "webhook-signature": wh.sign("msg_ref", now, body.decode())}
    assert _post(client, body, headers).status_code == 204


def test_v1a_signed_request_is_accepted(client):
    body = _event(id_="ed")
    headers = Signer([urls.PRIVATE_KEY]).headers("msg_ed", body)
    assert _post(client, body, headers).status_code == 204


@pytest.mark.parametrize("case", ["tampered", "old", "future", "wrong_secret", "missing", "unknown_version"])
def test_rejections_are_401_with_empty_body_and_store_nothing(client, case):
    body = _event(id_="x")
    signer = Signer(urls.SECRETS)
    headers = signer.headers("msg_bad", body)
    if case == "tampered":
        body = body.replace(b'"x"', b'"y"')
    elif case == "old":
        headers = signer.headers("msg_bad", body, timestamp=int(time.time()) - 301)
    elif case == "future":
        headers = signer.headers("msg_bad", body, timestamp=int(time.time()) + 301)
    elif case == "wrong_secret":
        headers = Signer([signing.generate_secret()]).headers("msg_bad", body)
    elif case == "missing":
        del headers["webhook-signature"]
    elif case == "unknown_version":
        headers["webhook-signature"] = headers["webhook-signature"].replace("v1,", "v2,")
    resp = _post(client, body, headers)
    assert resp.status_code == 401 and resp.content == b""
    assert not ReceivedEvent.objects.filter(event_id="msg_bad").exists()


def test_rotation_accepts_every_configured_secret(client, monkeypatch):
    new = signing.generate_secret()
    monkeypatch.setattr(urls, "SECRETS", [urls.SECRETS[0], new])
    body = _event(id_="rot")
    assert _post(client, body, Signer([new]).headers("msg_rot_new", body)).status_code == 204
    assert _post(client, body, Signer([urls.SECRETS[0]]).headers("msg_rot_old", body)).status_code == 204


def test_unknown_type_is_acknowledged_and_not_queued(client):
    body = _event(type_="something.new")
    assert _post(client, body, Signer(urls.SECRETS).headers("msg_unknown", body)).status_code == 204
    assert ReceivedEvent.objects.get(event_id="msg_unknown").status == ReceivedEvent.IGNORED


def test_get_is_not_allowed(client):
    assert client.get("/hooks/tests").status_code == 405


def test_failing_handler_retries_then_dead_letters_with_alert(client, settings, caplog):
    settings.IDP_WEBHOOK_RECEIVER_MAX_ATTEMPTS = 3
    settings.IDP_WEBHOOK_RECEIVER_RETRY_BASE = 0
    body = _event(type_="always.fails")
    assert _post(client, body, Signer(urls.SECRETS).headers("msg_fails", body)).status_code == 204
    pk = ReceivedEvent.objects.get(event_id="msg_fails").pk
    with caplog.at_level(logging.WARNING, logger="idp.webhooks.receiver"):
        for _ in range(3):
            receiver.process(pk)
    event = ReceivedEvent.objects.get(pk=pk)
    assert event.status == ReceivedEvent.DEAD and event.attempts == 3
    assert "handler bug" in event.last_error
    assert not Realm.objects.filter(name="never-msg_fails").exists()  # the handler's work rolled back
    assert any(r.levelno == logging.ERROR and "dead-lettered" in r.getMessage() for r in caplog.records)
    receiver.process(pk)  # dead events are not run again
    assert ReceivedEvent.objects.get(pk=pk).attempts == 3
    receiver.redrive("tests")
    assert ReceivedEvent.objects.get(pk=pk).status == ReceivedEvent.QUEUED


def test_dead_letter_alert_signal_fires_after_commit(client, settings, django_capture_on_commit_callbacks):
    settings.IDP_WEBHOOK_RECEIVER_MAX_ATTEMPTS = 1
    alerts = []
    receiver.event_dead_lettered.connect(lambda sender, event, **kw: alerts.append(event.event_id),
                                         weak=False, dispatch_uid="test-alert2")
    try:
        body = _event(type_="always.fails")
        headers = Signer(urls.SECRETS).headers("msg_dead", body)
        assert _post(client, body, headers).status_code == 204
        pk = ReceivedEvent.objects.get(event_id="msg_dead").pk
        with django_capture_on_commit_callbacks(execute=True):
            receiver.process(pk)
        assert alerts == ["msg_dead"]
    finally:
        receiver.event_dead_lettered.disconnect(dispatch_uid="test-alert2")


def test_retry_is_scheduled_and_picked_up_by_the_sweeper(client, settings, monkeypatch):
    settings.IDP_WEBHOOK_RECEIVER_RETRY_BASE = 10
    body = _event(type_="always.fails")
    assert _post(client, body, Signer(urls.SECRETS).headers("msg_retry", body)).status_code == 204
    event = ReceivedEvent.objects.get(event_id="msg_retry")
    receiver.process(event.pk)
    event.refresh_from_db()
    assert event.status == ReceivedEvent.QUEUED and event.attempts == 1
    assert 9 <= (event.next_attempt_at - event.received_at).total_seconds() <= 30
    sent = []
    monkeypatch.setattr("webhooks.dispatch.received", lambda ids: sent.extend(ids))
    assert receiver.sweep() == 0  # not due yet
    receiver.sweep(now=event.next_attempt_at)
    assert sent == [event.pk]


def test_invalid_json_after_valid_signature_is_400(client):
    body = b"not json"
    assert _post(client, body, Signer(urls.SECRETS).headers("msg_nojson", body)).status_code == 400


def test_verify_decorator(client):
    body = b"{}"
    assert _post(client, body, Signer(urls.SECRETS).headers("msg_plain", body), "/hooks/plain").content == b"msg_plain"
    resp = _post(client, body + b" ", Signer(urls.SECRETS).headers("msg_plain", body), "/hooks/plain")
    assert resp.status_code == 401 and resp.content == b""
