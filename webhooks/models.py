"""Sender side: endpoints (subscriptions) and their secrets, the outbox of messages, one delivery
per (message, endpoint) and one log row per attempt. Receiver side: received events, stored with
a unique event id before the sender gets its 2xx."""
import secrets

from django.db import models
from django.db.models import Q
from django.utils import timezone

from realms.data import crypto
from realms.models import IdField, Realm

from .payloads import format_of


def new_message_id():
    # Standard Webhooks ids look like msg_<random>; no "." so that id.timestamp.body stays unambiguous.
    return "msg_" + secrets.token_urlsafe(18)


class Endpoint(models.Model):
    """A subscription: where to POST which event types of one realm, and how hard to push."""

    id = IdField()
    realm = models.ForeignKey(Realm, on_delete=models.CASCADE, related_name="webhook_endpoints")
    url = models.CharField(max_length=2048, help_text="HTTPS URL the events are POSTed to.")
    description = models.CharField(max_length=1024, blank=True)
    event_types = models.JSONField(
        default=list, blank=True,
        help_text='Event types such as "user.created" or "auth.*"; empty means every type.',
    )
    enabled = models.BooleanField(default=True)
    rate_limit = models.PositiveIntegerField(default=0, help_text="Attempts per second; 0 = no limit.")
    max_concurrency = models.PositiveIntegerField(default=10, help_text="Requests in flight at once.")
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(auto_now=True)
    disabled_reason = models.CharField(max_length=255, blank=True)
    failing_since = models.DateTimeField(null=True, blank=True, help_text="First failure since the last success.")
    throttled_until = models.DateTimeField(null=True, blank=True, help_text="Slowed down after 429/502/504.")
    throttle_step = models.PositiveSmallIntegerField(default=0)
    slow_until = models.DateTimeField(
        null=True, blank=True, help_text="Sent by the slow lane until then, after requests that got no answer.")
    ownership_handshake = models.BooleanField(
        default=False, help_text="Before delivering, the URL must answer an OPTIONS request with "
                                 "WebHook-Allowed-Origin (checked when the URL is saved).")
    handshake_at = models.DateTimeField(null=True, blank=True, help_text="When the URL last agreed to be called.")
    payload = models.CharField(
        max_length=8, choices=[("thin", "thin: type and ids"), ("fat", "fat: a snapshot of the object")],
        default="thin", db_default="thin", help_text="What each event carries (docs/webhooks.md, Payloads).")
    payload_version = models.CharField(
        max_length=16, blank=True, default="", db_default="",
        help_text="Version of the fat payload's shape (empty for thin payloads).")
    envelope = models.CharField(
        max_length=16, choices=[("standard", "standard: type, timestamp, data"),
                                ("cloudevents", "CloudEvents 1.0, structured JSON")],
        default="standard", db_default="standard")
    portal_links_not_before = models.DateTimeField(
        null=True, blank=True, help_text="Consumer portal links issued before this open nothing (revoked).")
    ordered = models.BooleanField(
        default=False, db_default=False,
        help_text="Deliveries of one subject (user, client ...) go out in the order their events were written, "
                  "each after the one before it is delivered or has failed for good (webhooks.ordering).")

    class Meta:
        ordering = ["realm", "created_at"]
        indexes = [models.Index(fields=["realm", "enabled"])]

    def __str__(self):
        return self.url

    def throttled(self, now):
        """Slowed down (429/502/504): one request at a time, one a second."""
        return bool(self.throttled_until and self.throttled_until > now)

    def slow(self, now):
        """Demoted to the slow lane (requests that got no answer)."""
        return bool(self.slow_until and self.slow_until > now)

    def subscribes_to(self, event_type):
        if not self.event_types:
            return True
        for pattern in self.event_types:
            if pattern == event_type or pattern == "*":
                return True
            if pattern.endswith(".*") and event_type.startswith(pattern[:-1]):
                return True
        return False

    @property
    def payload_format(self):
        """The ``Delivery.format`` of this endpoint's next deliveries (``webhooks.payloads``)."""
        return format_of(self.payload, self.payload_version, self.envelope)

    def active_secrets(self, now=None):
        now = now or timezone.now()
        return [s for s in self.secrets.all() if s.expires_at is None or s.expires_at > now]


class EndpointSecret(models.Model):
    """One signing secret of an endpoint. During a rotation the old one keeps signing until
    ``expires_at`` so receivers can switch over; after a leak it is expired at once."""

    HMAC, ED25519 = "hmac", "ed25519"

    endpoint = models.ForeignKey(Endpoint, on_delete=models.CASCADE, related_name="secrets")
    kind = models.CharField(max_length=8, choices=[(HMAC, "v1 HMAC-SHA256"), (ED25519, "v1a Ed25519")], default=HMAC)
    secret_encrypted = models.TextField(help_text="whsec_ secret or whsk_ signing key, encrypted at rest.")
    public_key = models.CharField(max_length=128, blank=True, help_text="whpk_ key of a v1a pair.")
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self):
        return f"{self.kind} secret of {self.endpoint_id}"

    @property
    def secret(self):
        return crypto.decrypt(self.secret_encrypted)

    @secret.setter
    def secret(self, value):
        self.secret_encrypted = crypto.encrypt(value)


class Message(models.Model):
    """The outbox: one webhook event, written in the transaction of the change it reports.
    ``payload`` is the exact body sent on every attempt to a thin, standard endpoint; ``bodies``
    (JSON: format -> body) the exact bodies of the other formats its deliveries use, if any."""

    id = models.CharField(max_length=64, primary_key=True, default=new_message_id, editable=False)
    # Indexed by (realm, -created_at) below. Every index here, and more so on the two tables
    # below, is written once per delivery or per state change: no single-column or LIKE
    # (varchar_pattern_ops) index that a composite one already covers.
    realm = models.ForeignKey(Realm, on_delete=models.CASCADE, related_name="webhook_messages", db_index=False)
    type = models.CharField(max_length=128)
    payload = models.TextField()
    bodies = models.TextField(blank=True, default="", db_default="")
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    source_event_id = models.CharField(max_length=64, blank=True, help_text="Id of the realm event.")

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["realm", "-created_at"])]

    def __str__(self):
        return f"{self.type} {self.id}"


class Delivery(models.Model):
    """The delivery of one message to one endpoint, and where its retry schedule stands."""

    PENDING, SENDING, DELIVERED, FAILED = "pending", "sending", "delivered", "failed"
    STATES = [(s, s) for s in (PENDING, SENDING, DELIVERED, FAILED)]

    # Indexed by the (message, endpoint) constraint and the (endpoint, -created_at) index. No
    # foreign-key constraints, as on the log's rows (decision 0116): a delivery is written only with
    # its message, in its transaction (``outbox.publish``); Django's collector deletes deliveries
    # with their message or endpoint, as before (the constraints never cascaded); one written by an
    # event that raced its endpoint's deletion is deleted by its claim.
    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="deliveries", db_index=False,
                                db_constraint=False)
    endpoint = models.ForeignKey(Endpoint, on_delete=models.CASCADE, related_name="deliveries", db_index=False,
                                 db_constraint=False)
    state = models.CharField(max_length=10, choices=STATES, default=PENDING)
    # Fixed when the event is written, so every attempt sends the same bytes: "" is the message's
    # ``payload``, anything else a key of its ``bodies`` (webhooks.payloads.format_of).
    format = models.CharField(max_length=32, blank=True, default="", db_default="")
    # The event's subject on an ordered endpoint ("" otherwise, and out of the order after a
    # redelivery by hand): webhooks.ordering.
    subject = models.CharField(max_length=255, blank=True, default="", db_default="")
    attempts = models.PositiveIntegerField(default=0, help_text="Attempts made, all rounds together.")
    step = models.PositiveSmallIntegerField(default=0, help_text="Position in the retry schedule.")
    next_attempt_at = models.DateTimeField(default=timezone.now)
    # Set when a task for it is in the broker; cleared when none is, so the sweeper knows.
    dispatched_at = models.DateTimeField(null=True, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True, help_text="A sending delivery is retaken after this.")
    last_status = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=255, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "deliveries"
        constraints = [models.UniqueConstraint(fields=["message", "endpoint"], name="uniq_delivery")]
        indexes = [
            models.Index(fields=["endpoint", "-created_at"], name="wh_delivery_endpoint"),
            # Pending and sending rows apart: a dead endpoint's backlog (pending) must not make
            # the few rows in flight (sending) costly to find, nor the other way round.
            models.Index(fields=["next_attempt_at"], name="wh_delivery_due", condition=Q(state="pending")),
            models.Index(fields=["lease_until"], name="wh_delivery_lease", condition=Q(state="sending")),
            models.Index(fields=["endpoint", "next_attempt_at"], name="wh_delivery_ep_due",
                         condition=Q(state="pending")),
            # The head of each subject of an ordered endpoint; unordered rows ("") are not in it.
            models.Index(fields=["endpoint", "subject", "id"], name="wh_delivery_ordered",
                         condition=Q(state__in=["pending", "sending"]) & ~Q(subject="")),
        ]

    def __str__(self):
        return f"{self.message_id} -> {self.endpoint_id} ({self.state})"


class DeliveryAttempt(models.Model):
    """The delivery log: one row per attempt."""

    # No foreign-key constraints: with the delivery's own two, four checks a delivery cost
    # PostgreSQL about a sixth of its share (decision 0116). Rows are written only for claimed
    # deliveries, and Django's collector deletes them with their delivery or endpoint, as before;
    # a row of a delivery deleted mid-send stays until the retention purge.
    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="log", db_constraint=False)
    # Indexed by (endpoint, -started_at) and (message_id) below.
    endpoint = models.ForeignKey(Endpoint, on_delete=models.CASCADE, related_name="attempts", db_index=False,
                                 db_constraint=False)
    message_id = models.CharField(max_length=64, help_text="The event id (webhook-id).")
    number = models.PositiveIntegerField()
    started_at = models.DateTimeField(default=timezone.now)
    status = models.PositiveSmallIntegerField(null=True, blank=True, help_text="Empty: no answer.")
    success = models.BooleanField(default=False)
    duration_ms = models.PositiveIntegerField(default=0)
    response_body = models.TextField(blank=True, help_text="Truncated.")
    error = models.CharField(max_length=255, blank=True)

    class Meta:
        ordering = ["-started_at"]
        indexes = [models.Index(fields=["endpoint", "-started_at"]), models.Index(fields=["started_at"]),
                   models.Index(fields=["message_id"], name="wh_attempt_message")]

    def __str__(self):
        return f"{self.message_id} #{self.number} {self.status or self.error}"


class ReceivedEvent(models.Model):
    """Receiver side: an event stored before the 2xx, then handled from this queue."""

    QUEUED, DONE, IGNORED, DEAD = "queued", "done", "ignored", "dead"
    STATUSES = [(s, s) for s in (QUEUED, DONE, IGNORED, DEAD)]

    source = models.CharField(max_length=64, help_text="Name of the receiver that took it.")
    event_id = models.CharField(max_length=255, help_text="webhook-id.")
    type = models.CharField(max_length=128, blank=True)
    payload = models.TextField()
    received_at = models.DateTimeField(default=timezone.now, db_index=True)
    status = models.CharField(max_length=8, choices=STATUSES, default=QUEUED)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(default=timezone.now)
    dispatched_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    processed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-received_at"]
        constraints = [models.UniqueConstraint(fields=["source", "event_id"], name="uniq_received_event")]
        indexes = [models.Index(fields=["next_attempt_at"], name="wh_received_due", condition=Q(status="queued"))]

    def __str__(self):
        return f"{self.source} {self.event_id} ({self.status})"
