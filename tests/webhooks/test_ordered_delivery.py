"""Ordered delivery, an option per endpoint (decision 0102): through the real path (outbox,
in-process runner, claims, sender lanes, writer, sweeper) to real loopback receivers; deliveries
of one subject arrive in the order their events were written, the next held until the one before
is delivered or has failed for good; the default stays concurrent."""
import json
import random
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.db import transaction
from django.test import Client
from django.utils import timezone

from realms.audit.admin_events import record as admin_event
from realms.models import Realm, Role, User
from webhooks import conf, delivery, dispatch, ordering, services
from webhooks.models import Delivery, DeliveryAttempt, Endpoint
from webhooks.outbox import publish
from webhooks.views import representation

from .test_rest import api, tokens  # noqa: F401 (the REST API's fixtures: a master admin's bearer token)
from .workers import wait_until

pytestmark = pytest.mark.usefixtures("loopback_allowed")


class Subjects:
    """A receiver that notes, per subject, every request's event number as it arrives and which
    it accepted; ``decide(subject, n, attempt)`` answers a status, or None to answer after the sender's
    timeout (no answer for it)."""

    def __init__(self, decide, delay=0.0):
        self.arrivals, self.accepted, self.spans = {}, {}, []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                started = time.monotonic()
                data = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["data"]
                subject, n = data.get("resourcePath", "realm"), data["n"]
                with outer.lock:
                    attempt = outer.arrivals.setdefault(subject, []).count(n) + 1
                    outer.arrivals[subject].append(n)
                status = decide(subject, n, attempt)
                time.sleep(delay if status else conf.get("IDP_WEBHOOK_TIMEOUT") + 0.3)
                if status and 200 <= status < 300:
                    with outer.lock:
                        outer.accepted.setdefault(subject, []).append(n)
                outer.spans.append((started, time.monotonic()))
                try:
                    self.send_response(status or 200)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                except OSError:
                    pass  # the sender stopped waiting

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/hook"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def runner(settings):
    """The real worker path in this process: the in-process runner and its sweeper, the lanes."""
    settings.IDP_WEBHOOK_INPROCESS = True
    # Failures come from the receiver's dice, not from a loaded machine: a timeout long enough that
    # only "no answer" times out, and retries enough that no delivery of the thousand fails for good.
    settings.IDP_WEBHOOK_RETRY_SCHEDULE = [0.05] * 12
    settings.IDP_WEBHOOK_SWEEP_INTERVAL = 0.1
    settings.IDP_WEBHOOK_TIMEOUT = 1.5
    settings.IDP_WEBHOOK_SLOW_LANE_CONCURRENCY = 10
    yield
    dispatch.shutdown()


def _publish(realm, endpoint, subject, n):
    with transaction.atomic():
        return publish(realm, "user.updated", {"resourcePath": subject, "n": n}, endpoints=[endpoint])


def _in_order(arrivals):
    return all(a <= b for a, b in zip(arrivals, arrivals[1:]))


@pytest.mark.django_db(transaction=True)
def test_a_thousand_events_on_ten_subjects_arrive_in_order_per_subject_through_random_failures(realm, runner):
    rng, lock = random.Random(35), threading.Lock()

    def decide(subject, n, attempt):
        with lock:
            roll = rng.random()
        return 500 if roll < 0.12 else 503 if roll < 0.16 else None if roll < 0.18 else 200

    server = Subjects(decide)
    try:
        endpoint = services.create_endpoint(realm, server.url, [], ordered=True)[0]
        subjects = [f"users/u{s}" for s in range(10)]
        for n in range(100):
            for subject in subjects:
                _publish(realm, endpoint, subject, n)
        assert wait_until(lambda: Delivery.objects.filter(endpoint=endpoint, state=Delivery.DELIVERED).count() == 1000,
                          timeout=50), Delivery.objects.filter(endpoint=endpoint).exclude(state="delivered").count()
        for subject in subjects:
            # Every request of a subject, retries included, came after the one before was accepted.
            assert _in_order(server.arrivals[subject]), subject
            assert server.accepted[subject] == list(range(100)), subject
        tries = sum(len(a) for a in server.arrivals.values())
        assert tries - 1000 >= 100  # the receiver did fail, with 5xx and with no answer in time
        assert DeliveryAttempt.objects.filter(endpoint=endpoint, status=None).exists()
        assert set(Delivery.objects.filter(endpoint=endpoint).values_list("subject", flat=True)) == set(subjects)
    finally:
        server.close()


@pytest.mark.django_db(transaction=True)
def test_a_delivery_that_fails_for_good_lets_the_next_of_its_subject_go_and_says_so(realm, runner, settings):
    settings.IDP_WEBHOOK_RETRY_SCHEDULE = [1.0, 1.0]  # the other subject is delivered meanwhile
    server = Subjects(lambda subject, n, attempt: 500 if (subject, n) == ("users/u1", 0) else 200)
    try:
        endpoint = services.create_endpoint(realm, server.url, [], ordered=True)[0]
        messages = [_publish(realm, endpoint, "users/u1", n) for n in range(3)]
        other = _publish(realm, endpoint, "users/u2", 0)  # another subject is not held
        assert wait_until(lambda: Delivery.objects.get(message=other).state == Delivery.DELIVERED, timeout=5)
        first, second = (Delivery.objects.get(message=m) for m in messages[:2])
        assert second.state == Delivery.PENDING and second.attempts == 0
        assert second.last_error == f"held: {messages[0].id}, an earlier event of the same subject, is not delivered yet"
        assert first.state in (Delivery.PENDING, Delivery.SENDING) and server.accepted["users/u2"] == [0]
        assert wait_until(lambda: server.accepted.get("users/u1") == [1, 2], timeout=10)
        assert server.arrivals["users/u1"] == [0, 0, 0, 1, 2]  # three attempts of 0, then the rest in turn
        first.refresh_from_db()
        assert first.state == Delivery.FAILED and first.attempts == 3
        assert first.last_error == "failed for good; later events of its subject (users/u1) go on"
        assert DeliveryAttempt.objects.filter(message_id=messages[0].id).count() == 3
        assert wait_until(lambda: Delivery.objects.filter(
            message__in=messages[1:], state=Delivery.DELIVERED, last_error="").count() == 2)  # recorded a moment after
    finally:
        server.close()


@pytest.mark.django_db(transaction=True)
def test_the_next_of_a_subject_goes_to_the_workers_own_claimer_not_through_the_broker(realm, runner, settings,
                                                                                     monkeypatch):
    """A worker that lets the next delivery of a subject go hands it to its own claimer (decision
    0111): with the broker's hand-off out of reach, a subject's events still all arrive, in order."""
    settings.IDP_WEBHOOK_INPROCESS = False  # dispatching would mean a Celery task
    brokered = []
    monkeypatch.setattr(dispatch, "deliveries", lambda ids: brokered.extend(ids))
    server = Subjects(lambda subject, n, attempt: 200)
    try:
        endpoint = services.create_endpoint(realm, server.url, [], ordered=True)[0]
        ids = [Delivery.objects.get(message=_publish(realm, endpoint, "users/u1", n)).pk for n in range(5)]
        assert delivery.process(ids) == 1  # the first goes; the others are held behind it
        assert wait_until(lambda: Delivery.objects.filter(endpoint=endpoint, state=Delivery.DELIVERED).count() == 5,
                          timeout=10)
        assert server.accepted["users/u1"] == list(range(5))
        assert brokered == [*ids]  # only the outbox's hand-offs, which the test made by hand
    finally:
        server.close()


def _most_at_once(spans):
    return max(sum(1 for s, e in spans if s <= start < e) for start, _ in spans)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("ordered", [False, True])
def test_unordered_is_the_default_and_sends_one_subject_concurrently(realm, runner, ordered):
    server = Subjects(lambda subject, n, attempt: 200, delay=0.25)
    try:
        endpoint = services.create_endpoint(realm, server.url, [], **({"ordered": True} if ordered else {}))[0]
        assert endpoint.ordered is ordered
        for n in range(6):
            _publish(realm, endpoint, "users/u1", n)
        assert wait_until(lambda: Delivery.objects.filter(endpoint=endpoint, state=Delivery.DELIVERED).count() == 6,
                          timeout=10)
        if ordered:
            assert _most_at_once(server.spans) == 1 and server.arrivals["users/u1"] == list(range(6))
        else:
            assert _most_at_once(server.spans) >= 3
            assert not Delivery.objects.filter(endpoint=endpoint).exclude(subject="").exists()
    finally:
        server.close()


def test_the_subject_of_an_event(realm):
    assert ordering.subject({"resourcePath": "users/42/role-mappings/realm"}) == "users/42"
    assert ordering.subject({"resourcePath": "clients/c1"}) == "clients/c1"
    assert ordering.subject({"userId": "42", "clientId": "app"}) == "users/42"  # a user event
    assert ordering.subject({"userId": None, "clientId": "app"}) == "realm"
    assert ordering.subject({"resourcePath": ""}) == "realm"  # the realm itself
    assert ordering.subject({"realm": "r", "endpointId": "e"}) == "realm"  # a test event


@pytest.mark.django_db(transaction=True)
def test_a_realm_event_on_an_ordered_endpoint_carries_its_subject(realm, monkeypatch):
    monkeypatch.setattr("webhooks.dispatch.deliveries", lambda ids: None)
    ordered = services.create_endpoint(realm, "https://hooks.example.com/a", [], ordered=True)[0]
    plain = services.create_endpoint(realm, "https://hooks.example.com/b", [])[0]
    with transaction.atomic():
        admin_event(realm, "UPDATE", "REALM_ROLE_MAPPING", "users/u-7/role-mappings/realm")
    assert dict(Delivery.objects.values_list("endpoint_id", "subject")) == {ordered.pk: "users/u-7", plain.pk: ""}


def _held_pair(realm, endpoint, monkeypatch):
    """Event a delivered; b failed once, its retry a minute away; c held behind b."""
    dispatched = []
    monkeypatch.setattr("webhooks.dispatch.deliveries", lambda ids: dispatched.extend(ids))
    a, b, c = (Delivery.objects.get(message=_publish(realm, endpoint, "users/u1", n)) for n in range(3))
    Delivery.objects.filter(pk=a.pk).update(state=Delivery.DELIVERED, attempts=1)
    Delivery.objects.filter(pk=b.pk).update(attempts=1, step=1, next_attempt_at=timezone.now() + timezone.timedelta(
        seconds=60))
    delivery.process([c.pk], inline=True)
    c.refresh_from_db()
    assert c.state == Delivery.PENDING and c.attempts == 0 and c.next_attempt_at > timezone.now() + timezone.timedelta(
        seconds=60) and c.last_error.startswith("held: ")
    return a, b, c, dispatched


@pytest.mark.django_db(transaction=True)
def test_a_redelivery_by_hand_goes_at_once_out_of_the_order(realm, receiver_server, monkeypatch):
    endpoint = services.create_endpoint(realm, receiver_server.url(), [], ordered=True)[0]
    a, b, c, dispatched = _held_pair(realm, endpoint, monkeypatch)
    assert services.redeliver_event(endpoint, a.message_id) == 1
    delivery.process([a.pk], inline=True)
    a.refresh_from_db()
    assert a.state == Delivery.DELIVERED and a.attempts == 2 and a.subject == ""
    assert len(receiver_server.requests) == 1  # a, again, while b waits for its retry
    # A pending one redelivered keeps its place: b is first of its subject, c still held behind it.
    services.redeliver_event(endpoint, b.message_id)
    dispatched.clear()
    delivery.process([b.pk, c.pk], inline=True)
    assert len(receiver_server.requests) == 2
    assert Delivery.objects.get(pk=b.pk).state == Delivery.DELIVERED
    assert Delivery.objects.get(pk=c.pk).state == Delivery.PENDING and dispatched == [c.pk]  # let go by b


@pytest.mark.django_db(transaction=True)
def test_turning_ordering_off_lets_held_deliveries_go(realm, receiver_server, monkeypatch):
    endpoint = services.create_endpoint(realm, receiver_server.url(), [], ordered=True)[0]
    _, b, c, _ = _held_pair(realm, endpoint, monkeypatch)
    services.update_endpoint(endpoint, ordered=False)
    c.refresh_from_db()
    assert c.subject == "" and c.next_attempt_at <= timezone.now() and c.last_error == ""
    delivery.process([c.pk], inline=True)
    assert Delivery.objects.get(pk=c.pk).state == Delivery.DELIVERED
    assert Delivery.objects.get(pk=b.pk).state == Delivery.PENDING
    assert _publish(realm, Endpoint.objects.get(pk=endpoint.pk), "users/u1", 9).deliveries.get().subject == ""


@pytest.mark.django_db
def test_the_services_and_the_console_set_ordered(realm):
    endpoint = services.create_endpoint(realm, "https://hooks.example.com/a", [])[0]
    assert endpoint.ordered is False
    with pytest.raises(services.WebhookError, match="ordered is a boolean"):
        services.update_endpoint(endpoint, ordered="yes")
    services.update_endpoint(endpoint, ordered=True)
    assert representation(Endpoint.objects.get(pk=endpoint.pk))["ordered"] is True
    master = Realm.objects.get(name="master")
    admin = User.objects.create(realm=master, username="console-admin")
    admin.roles.add(Role.objects.get(realm=master, client=None, name="admin"))
    console = Client()
    console.force_login(admin)
    console.get(f"/admin/master/console/webhooks/endpoint/?realm__id__exact={realm.pk}")
    resp = console.post("/admin/master/console/webhooks/endpoint/add/", {
        "url": "https://hooks.example.com/b", "enabled": "on", "rate_limit": "0", "max_concurrency": "10",
        "ordered": "on"}, follow=True)
    assert resp.status_code == 200
    assert Endpoint.objects.get(url="https://hooks.example.com/b").ordered is True


@pytest.mark.django_db
def test_the_rest_api_sets_and_shows_ordered(realm, api):
    created = api("post", "", {"url": "https://hooks.example.com/a", "ordered": True})
    assert created.status_code == 201 and created.json()["ordered"] is True
    endpoint_id = created.json()["id"]
    refused = api("put", f"/{endpoint_id}", {"ordered": "yes"})
    assert refused.status_code == 400 and refused.json() == {"errorMessage": "ordered is a boolean"}
    assert api("put", f"/{endpoint_id}", {"ordered": False}).status_code == 204
    assert api("get", f"/{endpoint_id}").json()["ordered"] is False
    assert api("get", "").json()[0]["ordered"] is False
    assert api("post", "", {"url": "https://hooks.example.com/b"}).json()["ordered"] is False  # the default
