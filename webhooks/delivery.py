"""Delivering one message to one endpoint: claim, sign, POST, log, then schedule what comes next.

Every endpoint is its own queue (its pending deliveries, in the database) with its own
concurrency limit (slots in Redis): a task that finds the endpoint's slots taken gives its
delivery back to that queue and frees the worker at once, and whoever releases a slot pulls
the next one. A slow or dead endpoint therefore holds at most ``max_concurrency`` workers, and
the others keep flowing. See docs/decisions/0008-webhook-delivery.md.
"""
import email.utils
import logging
import random
import time
from datetime import timedelta

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from . import conf, dispatch, limits, notify
from .http import HTTPError, TargetRefused, post, prepare
from .models import Delivery, DeliveryAttempt, Endpoint, ReceivedEvent
from .signing import InvalidSecret, Signer

logger = logging.getLogger("idp.webhooks")

SLOW_DOWN_STATUSES = (429, 502, 504)
MAX_THROTTLE_SECONDS = 3600


def _lease_seconds():
    return conf.get("IDP_WEBHOOK_TIMEOUT") + conf.get("IDP_WEBHOOK_LEASE_MARGIN")


def attempt(delivery_id):
    """Run one attempt of a delivery if it is due and the endpoint has a free slot."""
    now = timezone.now()
    d = Delivery.objects.select_related("endpoint", "message").filter(pk=delivery_id).first()
    if d is None or d.state != Delivery.PENDING:
        return
    endpoint = d.endpoint
    if not endpoint.enabled:
        Delivery.objects.filter(pk=d.pk, state=Delivery.PENDING).update(
            state=Delivery.FAILED, last_error="endpoint disabled", dispatched_at=None)
        return
    if d.next_attempt_at > now:
        _give_back(d, d.next_attempt_at)
        return
    # Slowed down after 429/502/504: one request at a time, at most one per second.
    throttled = endpoint.throttled_until and endpoint.throttled_until > now
    token = limits.acquire(endpoint.pk, 1 if throttled else max(endpoint.max_concurrency, 1), _lease_seconds())
    if token is None:
        _give_back(d, d.next_attempt_at)
        limits.mark_waiting(endpoint.pk)
        return
    waiting = False
    try:
        if not limits.within_rate(endpoint.pk, 1 if throttled else endpoint.rate_limit):
            # Over this second's budget: back in a second, without pulling the next one now.
            _give_back(d, now + timedelta(seconds=1))
            return
        claimed = Delivery.objects.filter(pk=d.pk, state=Delivery.PENDING, next_attempt_at__lte=now).update(
            state=Delivery.SENDING, lease_until=now + timedelta(seconds=_lease_seconds()), dispatched_at=None)
        if claimed:
            _send(d, endpoint)
    finally:
        waiting = limits.release(endpoint.pk, token)
    if waiting:
        pump(endpoint.pk)


def _give_back(d, when):
    """Back to the endpoint's queue, not in the broker: pump or sweep dispatches it again."""
    Delivery.objects.filter(pk=d.pk, state=Delivery.PENDING).update(next_attempt_at=when, dispatched_at=None)


def pump(endpoint_id):
    """Dispatch the endpoint's next waiting delivery, if any (called when a slot frees)."""
    now = timezone.now()
    with transaction.atomic():
        ids = list(Delivery.objects.select_for_update(skip_locked=True)
                   .filter(endpoint_id=endpoint_id, state=Delivery.PENDING, dispatched_at__isnull=True,
                           next_attempt_at__lte=now)
                   .order_by("next_attempt_at").values_list("pk", flat=True)[:1])
        if ids:
            Delivery.objects.filter(pk__in=ids).update(dispatched_at=now)
    dispatch.deliveries(ids)


_signers = {}


def _signer(endpoint):
    """The endpoint's Signer, cached per process until the endpoint changes (a rotation touches
    it) or the first of its secrets expires."""
    now = timezone.now()
    cached = _signers.get(endpoint.pk)
    if cached and cached[0] == endpoint.updated_at and (cached[1] is None or cached[1] > now):
        return cached[2]
    secrets = endpoint.active_secrets(now)
    expiries = [s.expires_at for s in secrets if s.expires_at]
    signer = Signer([s.secret for s in secrets])
    _signers[endpoint.pk] = (endpoint.updated_at, min(expiries) if expiries else None, signer)
    return signer


def retry_after_seconds(value, now=None):
    """``Retry-After``: delay seconds or an HTTP date; None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        seconds = int(value)
    else:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when is None or when.tzinfo is None:
            return None
        seconds = int((when - (now or timezone.now())).total_seconds())
    return max(0, min(seconds, conf.get("IDP_WEBHOOK_MAX_RETRY_AFTER")))


def next_delay(step, retry_after=None):
    """Seconds until the next attempt after attempt ``step`` + 1 failed; None = schedule over."""
    schedule = conf.get("IDP_WEBHOOK_RETRY_SCHEDULE")
    if step >= len(schedule):
        return None
    jitter = conf.get("IDP_WEBHOOK_RETRY_JITTER")
    delay = schedule[step] * random.uniform(1 - jitter, 1 + jitter)
    return max(delay, retry_after or 0)


def _send(d, endpoint):
    number = d.attempts + 1
    started = timezone.now()
    t0 = time.monotonic()
    status, error, body, retry_after = None, "", b"", None
    try:
        target = prepare(endpoint.url)
        payload = d.message.payload.encode()
        resp = post(target, payload, _signer(endpoint).headers(d.message_id, payload))
        status, body = resp.status, resp.body
        retry_after = retry_after_seconds(resp.headers.get("Retry-After") or resp.headers.get("retry-after"))
    except TargetRefused as exc:
        error = f"refused: {exc}"
    except InvalidSecret as exc:
        error = f"no usable secret: {exc}"
    except HTTPError as exc:
        error = f"{exc.__class__.__name__}: no answer"
    duration = int((time.monotonic() - t0) * 1000)
    success = status is not None and 200 <= status < 300
    DeliveryAttempt.objects.create(
        delivery=d, endpoint=endpoint, message_id=d.message_id, number=number, started_at=started,
        status=status, success=success, duration_ms=duration, error=error[:255],
        response_body=body.decode("utf-8", "replace"),
    )
    now = timezone.now()
    fields = {"attempts": number, "last_status": status, "last_error": error[:255], "lease_until": None}
    if success:
        Delivery.objects.filter(pk=d.pk).update(state=Delivery.DELIVERED, **fields)
        if endpoint.failing_since or endpoint.throttle_step:
            Endpoint.objects.filter(pk=endpoint.pk).update(failing_since=None, throttle_step=0, throttled_until=None)
        return
    if status == 410:
        Delivery.objects.filter(pk=d.pk).update(state=Delivery.FAILED, **fields)
        disable(endpoint, "the endpoint answered 410 Gone")
        return
    delay = next_delay(d.step, retry_after)
    if delay is None:
        Delivery.objects.filter(pk=d.pk).update(state=Delivery.FAILED, **fields)
    else:
        Delivery.objects.filter(pk=d.pk).update(
            state=Delivery.PENDING, step=d.step + 1, next_attempt_at=now + timedelta(seconds=delay),
            dispatched_at=None, **fields)
    if status in SLOW_DOWN_STATUSES:
        step = min(endpoint.throttle_step, 10)
        seconds = min(max(conf.get("IDP_WEBHOOK_THROTTLE_SECONDS") * 2 ** step, retry_after or 0), MAX_THROTTLE_SECONDS)
        Endpoint.objects.filter(pk=endpoint.pk).update(
            throttled_until=now + timedelta(seconds=seconds), throttle_step=step + 1)
    Endpoint.objects.filter(pk=endpoint.pk, failing_since__isnull=True).update(failing_since=started)
    failing_since = endpoint.failing_since or started
    if now - failing_since >= timedelta(seconds=conf.get("IDP_WEBHOOK_DISABLE_AFTER")):
        disable(endpoint, f"no successful delivery since {failing_since:%Y-%m-%d %H:%M} UTC")


def disable(endpoint, reason):
    """Disable and tell the realm's admins (an admin event, and an email where SMTP is set)."""
    with transaction.atomic():
        changed = Endpoint.objects.filter(pk=endpoint.pk, enabled=True).update(enabled=False, disabled_reason=reason)
        if changed:
            logger.warning("webhook endpoint %s of realm %s disabled: %s", endpoint.pk, endpoint.realm_id, reason)
            notify.endpoint_disabled(endpoint, reason)
    return bool(changed)


def redeliver(deliveries):
    """Send again from the start of the schedule, same event id (webhook-id). Returns the count."""
    now = timezone.now()
    with transaction.atomic():
        ids = list(deliveries.exclude(state=Delivery.SENDING).select_for_update(skip_locked=True)
                   .values_list("pk", flat=True))
        Delivery.objects.filter(pk__in=ids).update(
            state=Delivery.PENDING, step=0, next_attempt_at=now, dispatched_at=now, lease_until=None)
        transaction.on_commit(lambda: dispatch.deliveries(ids))
    return len(ids)


def redeliver_range(endpoint, since, until, failed_only=False):
    qs = Delivery.objects.filter(endpoint=endpoint, message__created_at__gte=since, message__created_at__lt=until)
    if failed_only:
        qs = qs.filter(state=Delivery.FAILED)
    return redeliver(qs)


def sweep(now=None):
    """Retake deliveries of dead workers, dispatch due retries and lost hand-offs; same for the
    receiver's queue. Runs every few seconds (Celery beat in production, a thread in dev)."""
    from . import receiver

    now = now or timezone.now()
    Delivery.objects.filter(state=Delivery.SENDING, lease_until__lt=now).update(
        state=Delivery.PENDING, next_attempt_at=now, dispatched_at=None, lease_until=None)
    stale = now - timedelta(seconds=conf.get("IDP_WEBHOOK_REDISPATCH_AFTER"))
    with transaction.atomic():
        ids = list(Delivery.objects.select_for_update(skip_locked=True)
                   .filter(state=Delivery.PENDING, next_attempt_at__lte=now)
                   .filter(Q(dispatched_at__isnull=True) | Q(dispatched_at__lt=stale))
                   .order_by("next_attempt_at").values_list("pk", flat=True)[:5000])
        Delivery.objects.filter(pk__in=ids).update(dispatched_at=now)
    dispatch.deliveries(ids)
    return len(ids) + receiver.sweep(now)


def purge(now=None):
    """Retention: drop log rows, finished deliveries and receiver records older than the limit."""
    from .models import Message

    cutoff = (now or timezone.now()) - timedelta(days=conf.get("IDP_WEBHOOK_RETENTION_DAYS"))
    counts = {
        "attempts": DeliveryAttempt.objects.filter(started_at__lt=cutoff).delete()[1].get("webhooks.DeliveryAttempt", 0),
        "messages": Message.objects.filter(created_at__lt=cutoff)
        .exclude(deliveries__state__in=[Delivery.PENDING, Delivery.SENDING]).delete()[1].get("webhooks.Message", 0),
        "received": ReceivedEvent.objects.filter(received_at__lt=cutoff)
        .exclude(status=ReceivedEvent.QUEUED).delete()[1].get("webhooks.ReceivedEvent", 0),
    }
    return counts
