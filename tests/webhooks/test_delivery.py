"""One attempt at a time, against a real loopback receiver and the real Redis slot limiter:
signing, logging, the retry schedule, Retry-After, slow-down, 410, disabling, redelivery,
sweeping and retention."""
import asyncio
import json
from datetime import timedelta

import pytest
import standardwebhooks
from django.utils import timezone

from realms import purges
from realms.audit.events import emit
from realms.models import Event
from webhooks import conf, delivery, limits, services, signing
from webhooks.models import Delivery, DeliveryAttempt, Endpoint, Message, ReceivedEvent
from webhooks.outbox import publish

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("loopback_allowed")]


@pytest.fixture
def endpoint(realm, receiver_server):
    ep, secret = services.create_endpoint(realm, receiver_server.url(), ["auth.*", "webhook.test"])
    ep.plain_secret = secret
    return ep


@pytest.fixture
def no_dispatch(monkeypatch):
    sent = []
    monkeypatch.setattr("webhooks.dispatch.deliveries", lambda ids: sent.extend(ids))
    return sent


def _publish(realm, endpoint):
    message = publish(realm, "auth.login", {"userId": "u"}, endpoints=[endpoint])
    return Delivery.objects.get(message=message, endpoint=endpoint)


def _due_now(d):
    Delivery.objects.filter(pk=d.pk).update(next_attempt_at=timezone.now())


def test_delivered_signed_and_logged(realm, endpoint, receiver_server, no_dispatch):
    d = _publish(realm, endpoint)
    delivery.attempt(d.pk)
    d.refresh_from_db()
    assert d.state == Delivery.DELIVERED and d.attempts == 1 and d.last_status == 200
    req = receiver_server.requests[0]
    payload = standardwebhooks.Webhook(endpoint.plain_secret).verify(req["body"], req["headers"])
    assert payload["type"] == "auth.login" and req["headers"]["webhook-id"] == d.message_id
    log = DeliveryAttempt.objects.get(delivery=d)
    assert (log.number, log.status, log.success, log.message_id) == (1, 200, True, d.message_id)


def test_an_inline_send_from_a_thread_whose_event_loop_runs(transactional_db, realm, endpoint, receiver_server,
                                                           no_dispatch, monkeypatch):
    """Playwright's synchronous API runs its event loop in the test's thread: the inline sends
    cannot start one of their own there. (Code run in a loop has a database connection of its own:
    the rows must be committed.)"""
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    d = _publish(realm, endpoint)

    async def inside_a_loop():
        delivery.attempt(d.pk)

    asyncio.run(inside_a_loop())
    d.refresh_from_db()
    assert d.state == Delivery.DELIVERED and len(receiver_server.requests) == 1


def test_500_then_200_same_id_new_timestamp(realm, endpoint, receiver_server, no_dispatch, monkeypatch):
    receiver_server.script = [(500, {}, b"boom")]
    d = _publish(realm, endpoint)
    monkeypatch.setattr("webhooks.signing._now", lambda: timezone.now().timestamp())
    delivery.attempt(d.pk)
    d.refresh_from_db()
    assert d.state == Delivery.PENDING and d.step == 1 and d.next_attempt_at > timezone.now()
    delivery.attempt(d.pk)  # not due yet: nothing sent
    assert len(receiver_server.requests) == 1
    _due_now(d)
    later = timezone.now().timestamp() + 7
    monkeypatch.setattr("webhooks.signing._now", lambda: later)
    delivery.attempt(d.pk)
    d.refresh_from_db()
    assert d.state == Delivery.DELIVERED and d.attempts == 2
    first, second = receiver_server.requests
    assert first["headers"]["webhook-id"] == second["headers"]["webhook-id"] == d.message_id
    assert first["headers"]["webhook-timestamp"] != second["headers"]["webhook-timestamp"]
    assert first["body"] == second["body"]
    log = list(DeliveryAttempt.objects.filter(delivery=d).order_by("number").values_list("number", "status", "response_body"))
    assert log == [(1, 500, "boom"), (2, 200, "")]


def test_schedule_exhausted_fails(realm, endpoint, receiver_server, no_dispatch, settings):
    settings.IDP_WEBHOOK_RETRY_SCHEDULE = [0, 0]
    receiver_server.default = (503, {}, b"")
    d = _publish(realm, endpoint)
    for _ in range(3):
        _due_now(d)
        delivery.attempt(d.pk)
    d.refresh_from_db()
    assert d.state == Delivery.FAILED and d.attempts == 3
    assert Endpoint.objects.get(pk=endpoint.pk).failing_since is not None


def test_retry_after_is_honoured(realm, endpoint, receiver_server, no_dispatch):
    receiver_server.script = [(503, {"Retry-After": "120"}, b"")]
    d = _publish(realm, endpoint)
    delivery.attempt(d.pk)
    d.refresh_from_db()
    assert (d.next_attempt_at - timezone.now()).total_seconds() > 115


@pytest.mark.parametrize("status", [429, 502, 504])
def test_slow_down_statuses_throttle_the_endpoint(realm, endpoint, receiver_server, no_dispatch, status):
    receiver_server.script = [(status, {}, b"")]
    d = _publish(realm, endpoint)
    delivery.attempt(d.pk)
    ep = Endpoint.objects.get(pk=endpoint.pk)
    assert ep.throttled_until > timezone.now() + timedelta(seconds=20) and ep.throttle_step == 1
    # While throttled one request at a time: a held slot makes the next delivery wait.
    token = limits.acquire(ep.pk, 1, 30)
    try:
        other = _publish(realm, ep)
        delivery.attempt(other.pk)
        other.refresh_from_db()
        # Back in the endpoint's queue; the slot's release pulls it (the sweeper only as a backstop).
        assert other.state == Delivery.PENDING and other.lease_until is None
        assert len(receiver_server.requests) == 1
    finally:
        limits.release(ep.pk, token)
    # A success ends the slow-down.
    delivery.attempt(other.pk)
    ep.refresh_from_db()
    assert ep.throttled_until is None and ep.failing_since is None


def test_410_disables_and_tells_the_admins(realm, endpoint, receiver_server, no_dispatch):
    receiver_server.script = [(410, {}, b"")]
    d = _publish(realm, endpoint)
    delivery.attempt(d.pk)
    d.refresh_from_db()
    ep = Endpoint.objects.get(pk=endpoint.pk)
    assert d.state == Delivery.FAILED and not ep.enabled and "410" in ep.disabled_reason
    event = Event.objects.get(kind=Event.ADMIN, resource_type="WEBHOOK_ENDPOINT", type="UPDATE")
    assert event.resource_path == f"webhooks/{ep.pk}" and event.details["enabled"] is False
    # Deliveries to a disabled endpoint are not attempted.
    other = _publish(realm, ep)
    delivery.attempt(other.pk)
    other.refresh_from_db()
    assert other.state == Delivery.FAILED and len(receiver_server.requests) == 1


def test_days_of_failure_disable(realm, endpoint, receiver_server, no_dispatch, settings):
    receiver_server.default = (500, {}, b"")
    Endpoint.objects.filter(pk=endpoint.pk).update(failing_since=timezone.now() - timedelta(days=4, hours=23))
    d = _publish(realm, endpoint)
    delivery.attempt(d.pk)
    assert Endpoint.objects.get(pk=endpoint.pk).enabled
    Endpoint.objects.filter(pk=endpoint.pk).update(failing_since=timezone.now() - timedelta(days=5, minutes=1))
    _due_now(d)
    delivery.attempt(d.pk)
    ep = Endpoint.objects.get(pk=endpoint.pk)
    assert not ep.enabled and "no successful delivery since" in ep.disabled_reason


def test_timeout_is_a_failed_attempt_without_status(realm, endpoint, receiver_server, no_dispatch, settings):
    settings.IDP_WEBHOOK_TIMEOUT = 0.3
    receiver_server.delay = 1.0
    d = _publish(realm, endpoint)
    delivery.attempt(d.pk)
    log = DeliveryAttempt.objects.get(delivery=d)
    assert log.status is None and not log.success and "no answer" in log.error
    assert Delivery.objects.get(pk=d.pk).state == Delivery.PENDING


def test_refused_target_is_logged_not_contacted(realm, receiver_server, no_dispatch, settings):
    ep, _ = services.create_endpoint(realm, receiver_server.url(), [])
    settings.IDP_OUTBOUND_ALLOWED_NETWORKS = []
    d = _publish(realm, ep)
    delivery.attempt(d.pk)
    assert "refused" in DeliveryAttempt.objects.get(delivery=d).error and receiver_server.requests == []


def test_full_slots_give_the_delivery_back_and_a_freed_slot_pulls_it(realm, endpoint, receiver_server, no_dispatch):
    Endpoint.objects.filter(pk=endpoint.pk).update(max_concurrency=1)
    token = limits.acquire(endpoint.pk, 1, 30)
    try:
        d = _publish(realm, endpoint)
        delivery.attempt(d.pk)
        d.refresh_from_db()
        assert d.state == Delivery.PENDING and d.lease_until is None and receiver_server.requests == []
        # Left to the endpoint's pull: the sweeper does not re-claim it before the backstop delay.
        assert delivery.sweep() == 0
        # Another delivery gets the second slot; when it releases it, the waiting one is pulled.
        Endpoint.objects.filter(pk=endpoint.pk).update(max_concurrency=2)
        other = _publish(realm, endpoint)
        delivery.attempt(other.pk)
        assert Delivery.objects.get(pk=other.pk).state == Delivery.DELIVERED
        assert no_dispatch == [d.pk]
        assert Delivery.objects.get(pk=d.pk).dispatched_at is not None
    finally:
        assert limits.release(endpoint.pk, token) is False  # nobody else is waiting now


def test_a_slow_endpoint_with_every_slot_taken_waits_for_a_slot_not_for_a_worker(
        realm, endpoint, receiver_server, no_dispatch, django_capture_on_commit_callbacks):
    healthy, _ = services.create_endpoint(realm, receiver_server.url(), ["auth.*"])
    Endpoint.objects.filter(pk=endpoint.pk).update(max_concurrency=1,
                                                   slow_until=timezone.now() + timedelta(minutes=5))
    token = limits.acquire(endpoint.pk, 1, 30)  # its one slot is held by a send that hangs
    endpoints = list(Endpoint.objects.filter(pk__in=[endpoint.pk, healthy.pk]))
    with django_capture_on_commit_callbacks(execute=True):
        message = publish(realm, "auth.login", {"userId": "u"}, endpoints=endpoints)
    held = Delivery.objects.get(message=message, endpoint=endpoint)
    # Only the healthy endpoint's delivery goes to the workers; the other waits in the database,
    # pending and marked dispatched, so the sweeper leaves it to the endpoint's pull.
    assert no_dispatch == [Delivery.objects.get(message=message, endpoint=healthy).pk]
    assert held.state == Delivery.PENDING and held.dispatched_at is not None
    assert delivery.sweep() == 0
    # The send that frees the slot finds the endpoint flagged waiting and pulls it.
    assert limits.release(endpoint.pk, token) is True
    delivery.pump(endpoint.pk, 1)
    assert no_dispatch[1:] == [held.pk]
    # With a slot free, a slow endpoint's delivery is dispatched at once (to the slow lane).
    no_dispatch.clear()
    with django_capture_on_commit_callbacks(execute=True):
        message = publish(realm, "auth.login", {"userId": "u"}, endpoints=[Endpoint.objects.get(pk=endpoint.pk)])
    assert no_dispatch == [Delivery.objects.get(message=message).pk]


def test_slots_shrink_for_a_demoted_endpoint_and_to_one_when_slowed_down(realm, endpoint, settings):
    now = timezone.now()
    ep = Endpoint.objects.get(pk=endpoint.pk)
    assert delivery.slot_limit(ep, now) == 10
    ep.slow_until = now + timedelta(minutes=5)
    assert delivery.slot_limit(ep, now) == 2
    settings.IDP_WEBHOOK_SLOW_LANE_CONCURRENCY = 3
    assert delivery.slot_limit(ep, now) == 3
    ep.throttled_until = now + timedelta(seconds=30)
    assert delivery.slot_limit(ep, now) == 1
    ep.slow_until = ep.throttled_until = now - timedelta(seconds=1)  # both over
    assert delivery.slot_limit(ep, now) == 10


def test_a_failed_hand_off_leaves_the_commit_alone(realm, endpoint, monkeypatch, django_capture_on_commit_callbacks):
    def broker_away(ids):
        raise ConnectionError("broker away")

    monkeypatch.setattr("webhooks.dispatch.deliveries", broker_away)
    with django_capture_on_commit_callbacks(execute=True):
        emit(realm, "LOGIN", user_id="u-1")
    # The change and its outbox rows are committed; the sweeper sends them after the backstop.
    assert Delivery.objects.get(endpoint=endpoint).state == Delivery.PENDING


def test_rate_limit(realm, endpoint, receiver_server, no_dispatch):
    Endpoint.objects.filter(pk=endpoint.pk).update(rate_limit=2)
    ds = [_publish(realm, endpoint) for _ in range(3)]
    for d in ds:
        delivery.attempt(d.pk)
    states = sorted(Delivery.objects.filter(pk__in=[d.pk for d in ds]).values_list("state", flat=True))
    # Two within the second's budget; the third waits (unless the second ticked over meanwhile).
    assert states.count(Delivery.DELIVERED) >= 2
    assert len(receiver_server.requests) == states.count(Delivery.DELIVERED)


def test_secret_rotation_with_overlap_and_after_a_leak(realm, endpoint, receiver_server, no_dispatch):
    old = endpoint.plain_secret
    new = services.rotate_secret(endpoint, overlap_seconds=3600)
    delivery.attempt(_publish(realm, endpoint).pk)
    req = receiver_server.requests[-1]
    assert len(req["headers"]["webhook-signature"].split(" ")) == 2
    for secret in (old, new):
        standardwebhooks.Webhook(secret).verify(req["body"], req["headers"])
    leaked = services.rotate_secret(endpoint, overlap_seconds=0)
    delivery.attempt(_publish(realm, endpoint).pk)
    req = receiver_server.requests[-1]
    assert len(req["headers"]["webhook-signature"].split(" ")) == 1
    standardwebhooks.Webhook(leaked).verify(req["body"], req["headers"])
    with pytest.raises(standardwebhooks.webhooks.WebhookVerificationError):
        standardwebhooks.Webhook(new).verify(req["body"], req["headers"])


def test_v1a_endpoint_signs_with_ed25519(realm, receiver_server, no_dispatch):
    ep, public = services.create_endpoint(realm, receiver_server.url(), [], signature="v1a")
    delivery.attempt(_publish(realm, ep).pk)
    req = receiver_server.requests[-1]
    signing.Verifier([public]).verify_request_headers(req["headers"], req["body"])


def test_redeliver_one_event_and_a_time_range(realm, endpoint, receiver_server, no_dispatch, django_capture_on_commit_callbacks):
    d1, d2 = _publish(realm, endpoint), _publish(realm, endpoint)
    for d in (d1, d2):
        delivery.attempt(d.pk)
    no_dispatch.clear()
    with django_capture_on_commit_callbacks(execute=True):
        assert services.redeliver_event(endpoint, d1.message_id) == 1
    assert no_dispatch == [d1.pk]
    delivery.attempt(d1.pk)
    assert [r["headers"]["webhook-id"] for r in receiver_server.requests] == [d1.message_id, d2.message_id, d1.message_id]
    now = timezone.now()
    with django_capture_on_commit_callbacks(execute=True):
        assert services.redeliver_range(endpoint, now - timedelta(minutes=1), now + timedelta(minutes=1)) == 2
        assert services.redeliver_range(endpoint, now - timedelta(minutes=1), now, failed_only=True) == 0
    with pytest.raises(services.WebhookError):
        services.redeliver_event(endpoint, "msg_unknown")


def test_sweeper_retakes_killed_deliveries_and_lost_hand_offs(realm, endpoint, no_dispatch, settings):
    d = _publish(realm, endpoint)
    now = timezone.now()
    # Dispatched a moment ago: the broker still has it, so the sweeper leaves it alone.
    assert delivery.sweep(now) == 0
    settings.IDP_WEBHOOK_REDISPATCH_AFTER = 0
    assert delivery.sweep(now + timedelta(seconds=1)) == 1 and no_dispatch == [d.pk]
    # A worker died while sending: once its lease ran out the delivery is pending again.
    Delivery.objects.filter(pk=d.pk).update(state=Delivery.SENDING, lease_until=now - timedelta(seconds=1))
    no_dispatch.clear()
    delivery.sweep(now + timedelta(seconds=60))
    assert Delivery.objects.get(pk=d.pk).state == Delivery.PENDING and no_dispatch == [d.pk]


def test_sweeper_pulls_a_busy_endpoints_backlog_by_its_free_slots(realm, endpoint, no_dispatch, settings):
    Endpoint.objects.filter(pk=endpoint.pk).update(max_concurrency=2)
    backlog = [_publish(realm, endpoint).pk for _ in range(5)]
    settings.IDP_WEBHOOK_REDISPATCH_AFTER = 0
    later = timezone.now() + timedelta(seconds=1)
    token = limits.acquire(endpoint.pk, 2, 30)  # one of its two slots is taken
    try:
        # A slot is free: the stale hand-offs are pulled up to the endpoint's limit (two), not all
        # five; it is flagged waiting, so the sends that free slots pull the rest.
        assert delivery.sweep(later) == 2 and len(no_dispatch) == 2 and set(no_dispatch) < set(backlog)
        limits.acquire(endpoint.pk, 2, 30)  # one of them is sending: no slot left
        assert delivery.sweep(later) == 0 and len(no_dispatch) == 2
    finally:
        assert limits.release(endpoint.pk, token) is True  # it was flagged waiting


def test_retention(realm, endpoint, no_dispatch):
    d = _publish(realm, endpoint)
    delivery.attempt(d.pk)
    ReceivedEvent.objects.create(source="x", event_id="old", payload="{}", status=ReceivedEvent.DONE)
    later = timezone.now() + timedelta(days=conf.get("IDP_WEBHOOK_RETENTION_DAYS") + 1)
    counts = purges.run(later)
    assert counts["webhooks.attempts"] == 1 and counts["webhooks.messages"] == 1 and counts["webhooks.received"] == 1
    assert not Message.objects.exists()


def test_default_schedule_is_ten_attempts_over_about_three_days(settings):
    del settings.IDP_WEBHOOK_RETRY_SCHEDULE
    del settings.IDP_WEBHOOK_RETRY_JITTER
    schedule = conf.get("IDP_WEBHOOK_RETRY_SCHEDULE")
    assert len(schedule) + 1 == 10
    assert 3 * 86400 < sum(schedule) < 3.5 * 86400
    assert schedule == sorted(schedule)
    for step, base in enumerate(schedule):
        assert base * 0.8 <= delivery.next_delay(step) <= base * 1.2
    assert delivery.next_delay(len(schedule)) is None


@pytest.mark.parametrize("value,expected", [("30", 30), ("", None), ("soon", None), ("999999999", 86400)])
def test_retry_after_parsing(value, expected):
    assert delivery.retry_after_seconds(value) == expected


def test_retry_after_http_date():
    from email.utils import format_datetime

    when = format_datetime(timezone.now() + timedelta(seconds=90), usegmt=True)
    assert 85 <= delivery.retry_after_seconds(when) <= 90


def test_test_event_goes_through_the_normal_path(realm, endpoint, receiver_server, no_dispatch):
    message = services.send_test_event(endpoint)
    delivery.attempt(Delivery.objects.get(message=message).pk)
    assert json.loads(receiver_server.requests[0]["body"])["type"] == "webhook.test"
