"""End to end with real Celery workers, Redis and PostgreSQL: a login reaches a subscribed
receiver signed and verifiable; 500 then 200 keeps the webhook-id with a new timestamp; 410
disables; a slow endpoint does not delay others; the captured request replayed late or tampered
gets 401 from our receiver. The worker-kill test is in test_e2e_kill.py (no other worker may run)."""
import time

import pytest
import redis
import standardwebhooks
from django.conf import settings as django_settings
from django.db import connection
from django.test import Client as HttpClient

from realms.representation import import_realm
from tests.servers import Receiver
from webhooks import services, signing
from webhooks.models import Delivery, Endpoint

from . import urls as receiver_urls
from .workers import start_worker, stop
from .workers import wait_until as _wait

pytestmark = [pytest.mark.services, pytest.mark.usefixtures("loopback_allowed")]


@pytest.fixture(scope="module")
def worker_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("workers")


@pytest.fixture(scope="module")
def worker(django_db_setup, django_db_blocker, worker_dir):
    redis.Redis.from_url(django_settings.CELERY_BROKER_URL).flushdb()
    proc = start_worker(connection.settings_dict["NAME"], worker_dir)
    yield proc
    stop(proc)


@pytest.fixture
def receiver_server():
    server = Receiver("127.0.0.1")
    yield server
    server.close()


def _realm_with_user(name="e2e"):
    return import_realm({
        "realm": name, "enabled": True,
        "clients": [{"clientId": "app", "secret": "app-secret-" + "x" * 20, "directAccessGrantsEnabled": True,
                     "redirectUris": ["https://app.example/cb"]}],
        "users": [{"username": "alice", "enabled": True,
                   "credentials": [{"type": "password", "value": "alice-pw", "temporary": False}]}],
    }).realm


def test_login_reaches_the_receiver_signed_and_our_receiver_rejects_replay_and_tamper(
        transactional_db, worker, receiver_server):
    realm = _realm_with_user()
    endpoint, secret = services.create_endpoint(realm, receiver_server.url(), ["auth.login"])
    resp = HttpClient().post(f"/realms/{realm.name}/protocol/openid-connect/token", {
        "grant_type": "password", "client_id": "app", "client_secret": "app-secret-" + "x" * 20,
        "username": "alice", "password": "alice-pw", "scope": "openid"})
    assert resp.status_code == 200, resp.content
    requests = receiver_server.wait_for(1)
    assert len(requests) == 1
    req = requests[0]
    payload = standardwebhooks.Webhook(secret).verify(req["body"], req["headers"])
    assert payload["type"] == "auth.login" and payload["data"]["realm"] == "e2e"
    assert payload["data"]["clientId"] == "app"
    assert _wait(lambda: Delivery.objects.filter(endpoint=endpoint, state=Delivery.DELIVERED).count() == 1)

    # The same captured request at our own receiver: accepted now, refused when replayed late or tampered.
    headers = {"HTTP_" + k.upper().replace("-", "_"): v for k, v in req["headers"].items()
               if k.lower().startswith("webhook-")}
    original = list(receiver_urls.SECRETS)
    receiver_urls.SECRETS[:] = [secret]
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr("django.conf.settings.ROOT_URLCONF", "tests.webhooks.urls")
            client = HttpClient(enforce_csrf_checks=True)
            assert client.post("/hooks/tests", req["body"], content_type="application/json", **headers).status_code == 204
            tampered = req["body"].replace(b'"e2e"', b'"evil"')
            r = client.post("/hooks/tests", tampered, content_type="application/json", **headers)
            assert r.status_code == 401 and r.content == b""
            mp.setattr(signing, "_now", lambda: int(req["headers"]["webhook-timestamp"]) + 301)
            r = client.post("/hooks/tests", req["body"], content_type="application/json", **headers)
            assert r.status_code == 401 and r.content == b""
    finally:
        receiver_urls.SECRETS[:] = original


def test_500_then_200_same_id_new_timestamp(transactional_db, worker, receiver_server):
    from realms.models import Realm

    realm = Realm.objects.create(name="e2e-retry")
    receiver_server.script = [(500, {}, b"try later")]
    endpoint, secret = services.create_endpoint(realm, receiver_server.url(), [])
    message = services.send_test_event(endpoint)
    first, second = receiver_server.wait_for(2)[:2]
    wh = standardwebhooks.Webhook(secret)
    for r in (first, second):
        wh.verify(r["body"], r["headers"])
    assert first["headers"]["webhook-id"] == second["headers"]["webhook-id"] == message.id
    assert int(second["headers"]["webhook-timestamp"]) > int(first["headers"]["webhook-timestamp"])
    assert _wait(lambda: Delivery.objects.get(message=message).state == Delivery.DELIVERED)
    log = list(Delivery.objects.get(message=message).log.order_by("number").values_list("number", "status"))
    assert log == [(1, 500), (2, 200)]


def test_410_disables(transactional_db, worker, receiver_server):
    from realms.models import Realm

    realm = Realm.objects.create(name="e2e-gone")
    receiver_server.default = (410, {}, b"")
    endpoint, _ = services.create_endpoint(realm, receiver_server.url(), [])
    services.send_test_event(endpoint)
    assert _wait(lambda: not Endpoint.objects.get(pk=endpoint.pk).enabled)
    assert "410" in Endpoint.objects.get(pk=endpoint.pk).disabled_reason
    assert len(receiver_server.requests) == 1


def test_slow_endpoint_does_not_delay_others(transactional_db, worker):
    from realms.models import Realm

    realm = Realm.objects.create(name="e2e-slow")
    slow, fast = Receiver("127.0.0.1"), Receiver("127.0.0.1")
    try:
        slow.delay = 2.5  # below the 3 s timeout: each slow request holds its slot
        slow_ep, _ = services.create_endpoint(realm, slow.url(), [], max_concurrency=2)
        fast_ep, _ = services.create_endpoint(realm, fast.url(), [])
        for _ in range(6):
            services.send_test_event(slow_ep)
        started = time.monotonic()
        for _ in range(5):
            services.send_test_event(fast_ep)
        assert len(fast.wait_for(5, timeout=10)) == 5
        fast_done = time.monotonic() - started
        # Eight worker threads, six slow deliveries: only two may be in flight on the slow endpoint.
        assert fast_done < 2.0, fast_done
        assert len(slow.requests) <= 2
    finally:
        slow.close()
        fast.close()
