"""A reusable Standard Webhooks receiver any app can mount.

    hooks = WebhookReceiver("billing", secrets=lambda: [settings.BILLING_WEBHOOK_SECRET])

    @hooks.on("invoice.paid")
    def invoice_paid(event):          # event: ReceivedEvent; event.data is the parsed payload
        ...                           # runs in the transaction that marks the event done

    urlpatterns = [path("hooks/billing", hooks.view)]

The view reads the raw body, checks the timestamp (5 min) and the signatures (``v1`` in constant
time, ``v1a`` Ed25519, several secrets during a rotation), answers 401 with an empty body on any
failure, and stores the event under a unique (receiver, event id) key before answering 2xx. A
duplicate is acknowledged and not handled again. Handlers run later from the stored queue with
retries; after repeated failures the event is dead-lettered and an alert is logged and signalled.
Event types without a handler are acknowledged and marked ignored.

``verify_webhook(secrets=...)`` is the decorator form for views that only need verification.
"""
import functools
import json
import logging
from datetime import timedelta
from importlib import import_module

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Min
from django.dispatch import Signal
from django.http import HttpResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from . import conf, dispatch, metrics
from .models import ReceivedEvent
from .signing import DEFAULT_TOLERANCE, VerificationError, Verifier

logger = logging.getLogger("idp.webhooks.receiver")

# Sent with event=<ReceivedEvent> when an event is dead-lettered; alerting hooks in here.
event_dead_lettered = Signal()

_receivers = {}


def _verifier(secrets, tolerance):
    """``secrets``: a list, or a callable returning one (read at request time, so rotation in
    settings or a database needs no restart)."""
    if callable(secrets):
        return Verifier(secrets(), tolerance)
    return Verifier(secrets, tolerance)


def _unauthorized():
    return HttpResponse(status=401, content=b"")


def verify_webhook(secrets, tolerance=DEFAULT_TOLERANCE):
    """Decorator: the view runs only for a verified request (``request.webhook_id`` set)."""

    def decorate(view):
        metrics.receivers.add(view.__name__)

        @csrf_exempt
        @functools.wraps(view)
        def wrapped(request, *args, **kwargs):
            body = request.body  # raw bytes, before anything parses them
            try:
                _verifier(secrets, tolerance).verify_request_headers(request.headers, body)
            except VerificationError as exc:
                logger.warning("webhook signature rejected on %s: %s", request.path, exc)
                metrics.signature_failure(view.__name__)
                return _unauthorized()
            request.webhook_id = request.headers["webhook-id"]
            return view(request, *args, **kwargs)

        return wrapped

    return decorate


class WebhookReceiver:
    def __init__(self, source, secrets, tolerance=DEFAULT_TOLERANCE):
        self.source = source
        self.secrets = secrets
        self.tolerance = tolerance
        self.handlers = {}
        _receivers[source] = self
        metrics.receivers.add(source)
        self.view = csrf_exempt(require_POST(self._view))

    def on(self, event_type):
        def register(fn):
            self.handlers[event_type] = fn
            return fn

        return register

    def _view(self, request):
        body = request.body
        try:
            _verifier(self.secrets, self.tolerance).verify_request_headers(request.headers, body)
        except VerificationError as exc:
            logger.warning("webhook signature rejected by receiver %s: %s", self.source, exc)
            metrics.signature_failure(self.source)
            return _unauthorized()
        try:
            event_type = json.loads(body).get("type", "")
        except (ValueError, AttributeError):
            return HttpResponse(status=400, content=b"")
        stored = store(self.source, request.headers["webhook-id"], str(event_type)[:128], body,
                       handled=event_type in self.handlers)
        return HttpResponse(status=204 if stored else 200)


def store(source, event_id, event_type, body, handled=True):
    """Store a verified event; False when it was already stored (a duplicate, acknowledged)."""
    status = ReceivedEvent.QUEUED if handled else ReceivedEvent.IGNORED
    try:
        with transaction.atomic():
            event = ReceivedEvent.objects.create(
                source=source, event_id=event_id, type=event_type, payload=body.decode("utf-8", "replace"),
                status=status, dispatched_at=timezone.now() if handled else None,
                processed_at=None if handled else timezone.now(),
            )
            if handled:
                transaction.on_commit(lambda: dispatch.received([event.pk]))
    except IntegrityError:
        return False
    return True


def _receiver_for(source):
    if source not in _receivers:
        # Receivers register when their module is imported; a worker has not imported the URL map.
        import_module(settings.ROOT_URLCONF)
    return _receivers.get(source)


def process(pk):
    """Run the handler of one queued event, inside the transaction that marks it done."""
    now = timezone.now()
    with transaction.atomic():
        event = (ReceivedEvent.objects.select_for_update(skip_locked=True)
                 .filter(pk=pk, status=ReceivedEvent.QUEUED).first())
        if event is None:
            return
        receiver = _receiver_for(event.source)
        handler = receiver.handlers.get(event.type) if receiver else None
        if handler is None:
            event.status, event.processed_at = ReceivedEvent.IGNORED, now
            event.save(update_fields=["status", "processed_at"])
            return
        event.data = json.loads(event.payload)
        try:
            with transaction.atomic():  # the handler's work is undone when it fails
                handler(event)
        except Exception as exc:
            event.attempts += 1
            event.last_error = f"{exc.__class__.__name__}: {exc}"[:2000]
            event.dispatched_at = None
            if event.attempts >= conf.get("IDP_WEBHOOK_RECEIVER_MAX_ATTEMPTS"):
                event.status = ReceivedEvent.DEAD
                logger.error("webhook %s of receiver %s dead-lettered after %d attempts: %s",
                             event.event_id, event.source, event.attempts, event.last_error)
                transaction.on_commit(lambda: event_dead_lettered.send(sender=ReceivedEvent, event=event))
            else:
                delay = conf.get("IDP_WEBHOOK_RECEIVER_RETRY_BASE") * 2 ** (event.attempts - 1)
                event.next_attempt_at = now + timedelta(seconds=delay)
                logger.warning("webhook %s of receiver %s failed (attempt %d), retry in %ss",
                               event.event_id, event.source, event.attempts, delay)
        else:
            event.status, event.processed_at = ReceivedEvent.DONE, timezone.now()
        event.save(update_fields=["status", "processed_at", "attempts", "last_error", "next_attempt_at",
                                  "dispatched_at"])


_last_alert = {}


def alert_on_queue_age(now=None):
    """An ERROR log line (at most once a minute per receiver) when the oldest queued event is older
    than ``IDP_WEBHOOK_RECEIVER_QUEUE_AGE_ALERT``: handlers are stuck or no worker runs. Returns
    {receiver: age in seconds} of those over the limit."""
    now = now or timezone.now()
    limit = conf.get("IDP_WEBHOOK_RECEIVER_QUEUE_AGE_ALERT")
    late = {}
    for row in (ReceivedEvent.objects.filter(status=ReceivedEvent.QUEUED, received_at__lt=now - timedelta(seconds=limit))
                .values("source").annotate(first=Min("received_at"))):
        age = (now - row["first"]).total_seconds()
        late[row["source"]] = age
        if now.timestamp() - _last_alert.get(row["source"], 0) >= 60:
            _last_alert[row["source"]] = now.timestamp()
            logger.error("webhook receiver %s: the oldest queued event is %d s old (alert after %d s)",
                         row["source"], age, limit)
    return late


def sweep(now=None):
    """Dispatch queued events that are due and not in flight (retries, lost hand-offs), and alert
    when the queue's oldest event is too old."""
    now = now or timezone.now()
    alert_on_queue_age(now)
    stale = now - timedelta(seconds=conf.get("IDP_WEBHOOK_REDISPATCH_AFTER"))
    with transaction.atomic():
        ids = list(ReceivedEvent.objects.select_for_update(skip_locked=True)
                   .filter(status=ReceivedEvent.QUEUED, next_attempt_at__lte=now)
                   .exclude(dispatched_at__gt=stale).values_list("pk", flat=True)[:1000])
        ReceivedEvent.objects.filter(pk__in=ids).update(dispatched_at=now)
    dispatch.received(ids)
    return len(ids)


def redrive(source=None):
    """Put dead-lettered events back in the queue (after the handler was fixed)."""
    qs = ReceivedEvent.objects.filter(status=ReceivedEvent.DEAD)
    if source:
        qs = qs.filter(source=source)
    return qs.update(status=ReceivedEvent.QUEUED, attempts=0, next_attempt_at=timezone.now(), dispatched_at=None)
