"""What the admin console and the REST API do with endpoints: one function per operation, each
raising ``WebhookError`` (turned into a 400 in one place) for input it refuses.

Every change is an admin event (``WEBHOOK_ENDPOINT``: CREATE, UPDATE, DELETE, ACTION for a
rotation) through ``realms.audit.admin_events.record``; that resource type has no webhook type in the
catalogue, so a change to a webhook endpoint never becomes a webhook (no loop)."""
import json
import socket
from datetime import timedelta
from urllib.parse import urlsplit

from django.db import transaction
from django.utils import timezone

from realms.audit.admin_events import record
from realms.http.action_tokens import issuer
from realms.http.outbound import HTTPError, TargetRefused, check_url, prepare
from realms.http.web import base_url

from . import catalogue, conf, delivery, ordering, payloads
from .errors import WebhooksError
from .models import Delivery, Endpoint, EndpointSecret, Message
from .notify import RESOURCE_TYPE
from .outbox import publish
from .signing import InvalidSecret, decode_secret, generate_key_pair, generate_secret

DEFAULT_ROTATION_OVERLAP = 24 * 3600
TEST_EVENT_TYPE = catalogue.TEST_EVENT_TYPE


class WebhookError(WebhooksError, ValueError):
    """Input refused; the message is safe to show to the caller."""


def validate_url(url):
    if not isinstance(url, str):
        raise WebhookError("url is a string")
    try:
        check_url(url)
    except TargetRefused as exc:
        raise WebhookError(str(exc)) from None
    return url


def validate_event_types(types):
    if not isinstance(types, (list, tuple)) or not all(isinstance(t, str) and t for t in types):
        raise WebhookError("eventTypes is a list of event type names")
    known = set(catalogue.all_types()) | {TEST_EVENT_TYPE}
    prefixes = {t.split(".", 1)[0] + ".*" for t in known}
    for t in types:
        if t != "*" and t not in known and t not in prefixes:
            raise WebhookError(f"unknown event type {t!r}")
    return list(types)


def payload_settings(kind, version, envelope):
    """The stored (payload, payload_version, envelope) of an endpoint: a fat payload without a
    version gets the latest one, pinned so a later version never changes what it receives; a
    version on a thin payload would do nothing, so it is refused."""
    if kind not in payloads.KINDS:
        raise WebhookError("payload is thin or fat")
    if envelope not in payloads.ENVELOPES:
        raise WebhookError("envelope is standard or cloudevents")
    if kind == payloads.THIN:
        if version:
            raise WebhookError("payloadVersion applies to fat payloads only")
        return kind, "", envelope
    version = version or catalogue.latest_version()
    if not isinstance(version, str) or version not in catalogue.VERSIONS:
        raise WebhookError(f"unknown payloadVersion {version!r} (known: {', '.join(sorted(catalogue.VERSIONS))})")
    return kind, version, envelope


def _add_secret(endpoint, kind, secret=None, now=None):
    if kind == EndpointSecret.ED25519:
        private, public = generate_key_pair()
        row = EndpointSecret(endpoint=endpoint, kind=kind, public_key=public, created_at=now or timezone.now())
        row.secret = private
        row.save()
        return public
    if secret is None:
        secret = generate_secret()
    else:
        try:
            decode_secret(secret)
        except InvalidSecret as exc:
            raise WebhookError(str(exc)) from None
    row = EndpointSecret(endpoint=endpoint, kind=EndpointSecret.HMAC, created_at=now or timezone.now())
    row.secret = secret
    row.save()
    return secret


def _iso(value):
    return value.isoformat().replace("+00:00", "Z") if value else None


def representation(endpoint):
    """The endpoint as the REST API answers it and its admin events record it (no secret)."""
    active = endpoint.active_secrets()
    return {
        "id": endpoint.pk,
        "url": endpoint.url,
        "eventTypes": endpoint.event_types,
        "enabled": endpoint.enabled,
        "description": endpoint.description,
        "createdAt": _iso(endpoint.created_at),
        "rateLimit": endpoint.rate_limit,
        "maxConcurrency": endpoint.max_concurrency,
        "signature": "v1a" if any(s.kind == EndpointSecret.ED25519 for s in active) else "v1",
        "publicKeys": [s.public_key for s in active if s.kind == EndpointSecret.ED25519],
        "disabledReason": endpoint.disabled_reason,
        "ownershipHandshake": endpoint.ownership_handshake,
        "handshakeAt": _iso(endpoint.handshake_at),
        "payload": endpoint.payload,
        "payloadVersion": endpoint.payload_version or None,
        "envelope": endpoint.envelope,
        "ordered": endpoint.ordered,
    }


def _admin_event(endpoint, operation, who=None, details=None):
    """``who``: the caller's ``realms.audit.admin_events.AuthDetails`` (None: the system)."""
    record(endpoint.realm, operation, RESOURCE_TYPE, f"webhooks/{endpoint.pk}", auth=who, details=details,
           # Read again: the caller's prefetched secrets predate a rotation.
           representation=lambda: representation(Endpoint.objects.get(pk=endpoint.pk)))


def handshake_origin():
    base = urlsplit(base_url()).hostname
    return conf.get("IDP_WEBHOOK_ORIGIN") or base or socket.getfqdn()


def check_ownership(url):
    """The optional handshake before real data (spec 2 §4): OPTIONS with ``WebHook-Request-Origin``;
    only a 2xx carrying ``WebHook-Allowed-Origin`` (our origin or ``*``) agrees to be called. Same
    address checks as every delivery; raises WebhookError otherwise."""
    origin = handshake_origin()
    try:
        resp = delivery.call("OPTIONS", prepare(url), None, {"WebHook-Request-Origin": origin},
                    timeout=min(conf.get("IDP_WEBHOOK_TIMEOUT"), 10.0))
    except TargetRefused as exc:
        raise WebhookError(str(exc)) from None
    except HTTPError:
        raise WebhookError("the URL did not answer the ownership handshake") from None
    allowed = {k.lower(): v for k, v in resp.headers.items()}.get("webhook-allowed-origin", "").strip()
    if not 200 <= resp.status < 300 or allowed not in (origin, "*"):
        raise WebhookError(f"the URL did not agree to receive webhooks from {origin} "
                           "(no WebHook-Allowed-Origin in a 2xx answer to OPTIONS)")


def create_endpoint(realm, url, event_types=(), description="", enabled=True, secret=None,
                    signature="v1", rate_limit=0, max_concurrency=None, ownership_handshake=False,
                    payload=payloads.THIN, payload_version=None, envelope=payloads.STANDARD, ordered=False,
                    who=None):
    """Returns (endpoint, secret): the ``whsec_`` secret, or the ``whpk_`` key for ``v1a``,
    shown to the caller once. With ``ownership_handshake`` the URL must agree first."""
    if signature not in ("v1", "v1a"):
        raise WebhookError("signature is v1 or v1a")
    validate_url(url)
    payload, payload_version, envelope = payload_settings(payload, payload_version, envelope)
    _check_plain_fields(enabled=enabled, ownership_handshake=ownership_handshake, description=description,
                        ordered=ordered)
    if ownership_handshake:
        check_ownership(url)  # before the transaction: no lock is held during the call
    with transaction.atomic():
        endpoint = Endpoint.objects.create(
            realm=realm, url=url, event_types=validate_event_types(event_types),
            description=description, enabled=enabled, rate_limit=_non_negative(rate_limit, "rateLimit"),
            max_concurrency=_positive(conf.get("IDP_WEBHOOK_DEFAULT_CONCURRENCY") if max_concurrency is None
                                      else max_concurrency, "maxConcurrency"),
            ownership_handshake=ownership_handshake, handshake_at=timezone.now() if ownership_handshake else None,
            payload=payload, payload_version=payload_version, envelope=envelope, ordered=ordered,
        )
        shown = _add_secret(endpoint, EndpointSecret.ED25519 if signature == "v1a" else EndpointSecret.HMAC, secret)
        _admin_event(endpoint, "CREATE", who)
    return endpoint, shown


def _positive(value, name):
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise WebhookError(f"{name} is a positive integer")
    return value


def _non_negative(value, name):
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise WebhookError(f"{name} is a non-negative integer")
    return value


def _check_plain_fields(**fields):
    """The type of each of these fields present in ``fields`` (model field names)."""
    for name, label in (("enabled", "enabled"), ("ownership_handshake", "ownershipHandshake"), ("ordered", "ordered")):
        if name in fields and not isinstance(fields[name], bool):
            raise WebhookError(f"{label} is a boolean")
    if "description" in fields and not isinstance(fields["description"], str):
        raise WebhookError("description is a string")


FIELDS = {"url": "url", "eventTypes": "event_types", "description": "description", "enabled": "enabled",
          "rateLimit": "rate_limit", "maxConcurrency": "max_concurrency", "ownershipHandshake": "ownership_handshake",
          "payload": "payload", "payloadVersion": "payload_version", "envelope": "envelope", "ordered": "ordered"}


def update_endpoint(endpoint, who=None, **changes):
    """``changes`` in model field names. Enabling an endpoint clears its failure state; a new URL
    (or turning the handshake on) repeats the ownership handshake when the endpoint asks for it."""
    if "url" in changes:
        validate_url(changes["url"])
    if "event_types" in changes:
        validate_event_types(changes["event_types"])
    if "rate_limit" in changes:
        _non_negative(changes["rate_limit"], "rateLimit")
    if "max_concurrency" in changes:
        _positive(changes["max_concurrency"], "maxConcurrency")
    _check_plain_fields(**changes)
    if {"payload", "payload_version", "envelope"} & set(changes):
        kind = changes.get("payload", endpoint.payload)
        # A version given, or the current one while staying fat; none when turning thin.
        version = changes.get("payload_version", endpoint.payload_version if kind == endpoint.payload else None)
        changes["payload"], changes["payload_version"], changes["envelope"] = payload_settings(
            kind, version, changes.get("envelope", endpoint.envelope))
    wants_handshake = changes.get("ownership_handshake", endpoint.ownership_handshake)
    if wants_handshake and (changes.get("url", endpoint.url) != endpoint.url or not endpoint.ownership_handshake):
        check_ownership(changes.get("url", endpoint.url))
        changes["handshake_at"] = timezone.now()
    if changes.get("enabled") and not endpoint.enabled:
        changes.update(disabled_reason="", failing_since=None, throttled_until=None, throttle_step=0, slow_until=None)
    with transaction.atomic():
        if endpoint.ordered and changes.get("ordered") is False:
            ordering.stop(endpoint.pk, timezone.now())
        for name, value in changes.items():
            setattr(endpoint, name, value)
        endpoint.save()
        _admin_event(endpoint, "UPDATE", who)
    return endpoint


@transaction.atomic
def delete_endpoint(endpoint, who=None):
    _admin_event(endpoint, "DELETE", who)
    endpoint.delete()


@transaction.atomic
def rotate_secret(endpoint, overlap_seconds=DEFAULT_ROTATION_OVERLAP, secret=None, signature=None, who=None):
    """Add a new secret; the current ones keep signing for ``overlap_seconds`` (0 after a leak:
    they stop at once). Returns the new secret (or public key), shown once."""
    if not isinstance(overlap_seconds, int) or isinstance(overlap_seconds, bool) or overlap_seconds < 0:
        raise WebhookError("overlapSeconds is a non-negative integer")
    now = timezone.now()
    if signature not in (None, "v1", "v1a"):  # compared, not hashed: the value may be any JSON
        raise WebhookError("signature is v1 or v1a")
    kind = {None: None, "v1": EndpointSecret.HMAC, "v1a": EndpointSecret.ED25519}[signature]
    current = [s for s in endpoint.secrets.all() if s.expires_at is None or s.expires_at > now]
    kind = kind or (current[-1].kind if current else EndpointSecret.HMAC)
    ends = now + timedelta(seconds=overlap_seconds)
    for s in current:
        if s.expires_at is None or s.expires_at > ends:
            s.expires_at = ends
            s.save(update_fields=["expires_at"])
    shown = _add_secret(endpoint, kind, secret, now=now)
    endpoint.save(update_fields=["updated_at"])  # senders drop their cached signer
    # Expired secrets are of no use to anyone; they are dropped rather than kept encrypted.
    endpoint.secrets.filter(expires_at__lte=now).delete()
    _admin_event(endpoint, "ACTION", who, {"action": "rotate-secret", "overlapSeconds": overlap_seconds})
    return shown


@transaction.atomic
def send_test_event(endpoint):
    """A ``webhook.test`` event to this endpoint only, through the normal delivery path."""
    return publish(endpoint.realm, TEST_EVENT_TYPE, {"realm": endpoint.realm.name, "endpointId": endpoint.pk},
                   endpoints=[endpoint])


def redeliver_event(endpoint, message_id):
    """Redeliver one event to this endpoint: a new delivery if it never had one, in the
    endpoint's format, rendered now from what the message kept if it was not rendered in it
    (refused when that format needs a snapshot the message never took: ``payloads.render_later``)."""
    fmt = endpoint.payload_format
    with transaction.atomic():
        # Locked: two redeliveries adding bodies to one message must not lose one of them.
        message = Message.objects.select_for_update().filter(pk=message_id, realm_id=endpoint.realm_id).first()
        if message is None:
            raise WebhookError("unknown event id")
        if not Delivery.objects.filter(message=message, endpoint=endpoint).exists():
            stored = json.loads(message.bodies or "{}")
            if fmt and fmt not in stored:
                try:
                    stored[fmt] = payloads.render_later(fmt, payload=message.payload, stored_bodies=message.bodies,
                                                        message_id=message.pk, source=issuer(endpoint.realm))
                except payloads.NotRendered as exc:
                    raise WebhookError(f"event {message.pk} cannot be redelivered to this endpoint: {exc}") from None
                message.bodies = json.dumps(stored, ensure_ascii=False)
                message.save(update_fields=["bodies"])
            Delivery.objects.create(message=message, endpoint=endpoint, format=fmt, next_attempt_at=timezone.now())
        return delivery.redeliver(Delivery.objects.filter(message=message, endpoint=endpoint))


def redeliver_range(endpoint, since, until, failed_only=False):
    if since >= until:
        raise WebhookError("since must be before until")
    return delivery.redeliver_range(endpoint, since, until, failed_only=failed_only)
