"""Stream management (SSF 1.0 §8.1): create, read, update, replace, delete, status, subjects,
verification, and RFC 8936 polling. Each function takes the authenticated receiver client and
raises ``SsfRefused`` with the status code and the OAuth-style error the spec and Keycloak give.

A stream's SETs are the deliveries of its webhook endpoint (``SsfStream.endpoint``, with the
``secevent`` envelope and an event type no realm event has, so only this module writes to it):
a push stream's are sent by the webhook workers, with their retries and the outbound client's
SSRF defence; a poll stream's wait held until the receiver polls and acknowledges them."""
import time
from datetime import timedelta

from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from realms.http.outbound import TargetRefused, prepare
from realms.http.web import realm_url
from webhooks import delivery as webhook_delivery
from webhooks import payloads, signing
from webhooks.models import Delivery, Endpoint, EndpointSecret

from ..errors import OidcError
from ..jose import ASYMMETRIC
from . import events
from .models import SsfStream

STATUSES = (SsfStream.ENABLED, SsfStream.PAUSED, SsfStream.DISABLED)
METHODS = (SsfStream.PUSH, SsfStream.RISC_PUSH, SsfStream.POLL, SsfStream.RISC_POLL)
POLL_LIMIT = 100  # SETs one poll returns at most, whatever maxEvents asks
LONG_POLL_SECONDS = 5.0  # how long a poll with returnImmediately false waits for a SET
MIN_VERIFICATION_INTERVAL = 60  # seconds between a receiver's verification requests (Keycloak's default)
ENDPOINT_EVENT_TYPES = ["ssf"]  # no realm event has this type: the outbox never fans out to it


class SsfRefused(OidcError):
    def __init__(self, status, error="", description=""):
        super().__init__(description or error)
        self.status, self.error, self.description = status, error, description


def _stream_error(description):
    return SsfRefused(400, "stream_error", description)


def base(issuer):
    return issuer + "/ssf/transmitter"


def poll_url(stream):
    return f"{base(stream.issuer)}/poll/{stream.id}"


def representation(stream):
    """The stream configuration as SSF 1.0 §8.1.1 and Keycloak's ``StreamConfig`` spell it."""
    rep = {"stream_id": stream.id, "iss": stream.issuer, "aud": [stream.audience],
           "events_supported": events.SUPPORTED, "events_requested": stream.events_requested,
           "events_delivered": events.delivered(stream),
           "delivery": {"method": stream.method,
                        "endpoint_url": poll_url(stream) if stream.polled else stream.endpoint_url},
           "min_verification_interval": MIN_VERIFICATION_INTERVAL,
           "format": "email" if (stream.client.attributes or {}).get(events.SUBJECT_FORMAT) == "email" else "iss_sub",
           "kc_status": stream.status}
    if stream.description:
        rep["description"] = stream.description
    if stream.reason:
        rep["kc_status_reason"] = stream.reason
    return rep


def own_stream(client, stream_id, *, implied=False):
    """The client's stream if ``stream_id`` names it (``implied``: or is absent, as Keycloak's
    delete and verify take the receiver's one stream); else 404: another receiver's stream is not
    found either, as in Keycloak."""
    stream = SsfStream.objects.filter(client=client).select_related("client", "realm", "endpoint").first()
    if stream is None or (stream.id != stream_id and not (implied and not stream_id)):
        raise SsfRefused(404)
    return stream


def _string_list(value, name):
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _stream_error(f"Invalid stream configuration: {name} is a list of strings")
    return list(dict.fromkeys(value))


def _description(value):
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > 1024:
        raise _stream_error("Invalid stream configuration: description is a string of at most 1024 characters")
    return value


def _delivery(body, issuer, stream=None):
    """(method, push URL) of a request's ``delivery``. A push URL is checked now as the webhook
    sender checks it before each request (https unless allowed, a public address unless
    allowlisted): a receiver cannot make the transmitter call an internal address."""
    delivery = body.get("delivery")
    if not isinstance(delivery, dict):
        raise _stream_error("Invalid stream configuration: missing delivery configuration")
    method, url = delivery.get("method"), delivery.get("endpoint_url")
    if method not in METHODS:
        raise _stream_error("Invalid stream configuration: unsupported delivery method")
    if stream is not None and method != stream.method:
        raise _stream_error("Invalid stream configuration: the delivery method cannot be changed")
    if "authorization_header" in delivery:
        # Deliveries carry the Standard Webhooks signature of the stream's endpoint, no header of
        # the receiver's choosing; refused rather than silently not sent.
        raise _stream_error("Invalid stream configuration: authorization_header is not supported")
    if method in (SsfStream.POLL, SsfStream.RISC_POLL):
        if url is not None and not str(url).startswith(base(issuer) + "/poll/"):
            raise _stream_error("Invalid stream configuration: delivery endpoint poll URL is defined by transmitter")
        return method, ""
    if not isinstance(url, str) or not url:
        raise _stream_error("Invalid stream configuration: missing delivery endpoint push URL")
    try:
        prepare(url)
    except TargetRefused as exc:
        raise _stream_error(f"Invalid stream configuration: endpoint_url refused: {exc}") from None
    return method, url


def _check_receiver(client):
    """The receiver's ``ssf.signatureAlgorithm``, ``ssf.userSubjectFormat`` and ``ssf.defaultSubjects``,
    refused now rather than ignored or failing each SET later, as Keycloak does: an asymmetric
    algorithm (the receiver verifies with the published keys), a subject format this transmitter
    writes, ALL or NONE."""
    attributes = client.attributes or {}
    alg, fmt = attributes.get(events.SIGNATURE_ALGORITHM), attributes.get(events.SUBJECT_FORMAT)
    if alg and alg not in ASYMMETRIC:
        raise _stream_error(f"Invalid stream configuration: signature algorithm {alg} is not in the transmitter "
                            f"allow-list {sorted(ASYMMETRIC)}")
    if fmt and fmt not in events.SUBJECT_FORMATS:
        raise _stream_error(f"Invalid stream configuration: user subject format {fmt} is not one of "
                            f"{list(events.SUBJECT_FORMATS)}")
    subjects = attributes.get(events.DEFAULT_SUBJECTS)
    if subjects and subjects.upper() not in ("ALL", "NONE"):
        raise _stream_error(f"Invalid stream configuration: default subjects {subjects} is not ALL or NONE")


def create(client, issuer, body):
    if not isinstance(body, dict):
        raise _stream_error("Invalid stream configuration")
    _check_receiver(client)
    method, url = _delivery(body, issuer)
    requested = _string_list(body.get("events_requested"), "events_requested")
    description = _description(body.get("description"))
    with transaction.atomic():
        if SsfStream.objects.select_for_update().filter(client=client).exists():
            raise SsfRefused(409, "stream_error", "Only one stream per receiver is allowed")
        stream = SsfStream(realm=client.realm, client=client, issuer=issuer, method=method, endpoint_url=url,
                           description=description, events_requested=requested)
        stream.audience = (client.attributes or {}).get(events.AUDIENCE) or f"{client.client_id}/{stream.id}"
        _save_new(stream)
    return stream


def _save_new(stream):
    """The stream with its webhook endpoint (and the endpoint's signing secret)."""
    endpoint = Endpoint.objects.create(
        realm=stream.realm, url=stream.endpoint_url or poll_url(stream), event_types=ENDPOINT_EVENT_TYPES,
        description=f"SSF stream of client {stream.client.client_id}", envelope=events.ENVELOPE)
    secret = EndpointSecret(endpoint=endpoint, kind=EndpointSecret.HMAC)
    secret.secret = signing.generate_secret()
    secret.save()
    stream.endpoint = endpoint
    stream.save()


def restore(client, config, *, status, reason, subjects):
    """A stream a realm import carries (Keycloak's ``ssf.streamConfig`` and status attributes),
    checked as ``create`` checks a receiver's request: the push URL through the outbound rules,
    the receiver's settings. Its stream id and audience are kept (the receiver knows them); the
    issuer is this server's for the realm: the configured base URL, else the file's with the
    realm's name. Transmitter-supplied properties are recomputed, as an update ignores them."""
    if not isinstance(config, dict):
        raise _stream_error("Invalid stream configuration")
    issuer = realm_url(None, client.realm.name)
    if not issuer:
        iss = config.get("iss")
        if not isinstance(iss, str) or "/realms/" not in iss:
            raise _stream_error("Invalid stream configuration: iss is not a realm's issuer URL")
        issuer = f"{iss.rsplit('/realms/', 1)[0]}/realms/{client.realm.name}"
    _check_receiver(client)
    delivery = config.get("delivery")
    if isinstance(delivery, dict) and delivery.get("method") in (SsfStream.POLL, SsfStream.RISC_POLL):
        delivery = {k: v for k, v in delivery.items() if k != "endpoint_url"}  # the transmitter's, made anew
    method, url = _delivery({"delivery": delivery}, issuer)
    if status not in STATUSES:
        raise _stream_error("status is enabled, paused or disabled")
    if not isinstance(reason, str) or len(reason) > 1024:
        raise _stream_error("reason is a string of at most 1024 characters")
    if not isinstance(subjects, list) or not all(
            isinstance(r, dict) and _valid_subject(r.get("subject")) and isinstance(r.get("included"), bool)
            for r in subjects):
        raise SsfRefused(400, "invalid_subject", "subjects is a list of {subject, included}")
    audience = config.get("aud")
    audience = audience if isinstance(audience, list) else [audience]
    if len(audience) != 1 or not isinstance(audience[0], str) or not audience[0] or len(audience[0]) > 512:
        raise _stream_error("Invalid stream configuration: aud is one audience")
    stream = SsfStream(realm=client.realm, client=client, issuer=issuer, audience=audience[0], method=method,
                       endpoint_url=url, description=_description(config.get("description")),
                       events_requested=_string_list(config.get("events_requested"), "events_requested"),
                       status=status, reason=reason, subjects=subjects)
    wanted = config.get("stream_id")
    if isinstance(wanted, str) and 0 < len(wanted) <= 64 and not SsfStream.objects.filter(pk=wanted).exists():
        stream.id = wanted  # else (a copy beside the original) a new id, as the realm import renames
    _save_new(stream)
    return stream


def update(client, body, *, replace):
    """PATCH changes the receiver-supplied properties given; PUT replaces them all (SSF 1.0
    §8.1.1.3, §8.1.1.4). Transmitter-supplied ones in the request are ignored."""
    if not isinstance(body, dict) or not body.get("stream_id"):
        raise _stream_error("Stream ID is required")
    stream = own_stream(client, body["stream_id"])
    _check_receiver(client)
    if replace or "delivery" in body:
        stream.method, url = _delivery(body, stream.issuer, stream)
        if url and url != stream.endpoint_url:
            stream.endpoint_url = url
            Endpoint.objects.filter(pk=stream.endpoint_id).update(url=url, updated_at=timezone.now())
    if replace or "events_requested" in body:
        stream.events_requested = _string_list(body.get("events_requested"), "events_requested")
    if replace or "description" in body:
        stream.description = _description(body.get("description"))
    stream.save()
    return stream


def delete(stream):
    """The stream and its endpoint; SETs not yet delivered go with it (SSF 1.0 §8.1.1.5)."""
    Endpoint.objects.filter(pk=stream.endpoint_id).delete()


def status_of(stream):
    rep = {"stream_id": stream.id, "status": stream.status}
    if stream.reason:
        rep["reason"] = stream.reason
    return rep


def _pending(stream):
    return Delivery.objects.filter(endpoint_id=stream.endpoint_id, state=Delivery.PENDING)


def set_status(client, body):
    """SSF 1.0 §8.1.2.2. Paused: SETs are held and sent once enabled again; disabled: none is
    kept, those waiting are dropped (failed with the reason)."""
    if not isinstance(body, dict) or not body.get("stream_id"):
        raise _stream_error("Stream ID is required")
    stream = own_stream(client, body["stream_id"])
    status, reason = body.get("status"), body.get("reason", "")
    if status not in STATUSES:
        raise _stream_error("status is enabled, paused or disabled")
    if not isinstance(reason, str) or len(reason) > 1024:
        raise _stream_error("reason is a string of at most 1024 characters")
    with transaction.atomic():
        if status == SsfStream.DISABLED:
            _pending(stream).update(state=Delivery.FAILED, last_error="stream disabled", dispatched_at=None)
        elif status == SsfStream.PAUSED and not stream.polled:
            _pending(stream).update(next_attempt_at=events.HELD_UNTIL, dispatched_at=None)
        elif status == SsfStream.ENABLED and stream.status != SsfStream.ENABLED and not stream.polled:
            released = list(_pending(stream).only("pk", "endpoint_id"))
            _pending(stream).update(next_attempt_at=timezone.now(), dispatched_at=timezone.now())
            transaction.on_commit(lambda: webhook_delivery.hand_off(released, [stream.endpoint]), robust=True)
        stream.status, stream.reason = status, reason
        stream.save(update_fields=["status", "reason", "updated_at"])
    return stream


def _subject(body):
    subject = body.get("subject") if isinstance(body, dict) else None
    if not _valid_subject(subject):
        raise SsfRefused(400, "invalid_subject", "subject is a subject identifier of format iss_sub, email, "
                                                 "opaque or complex (with a user)")
    return subject


def _valid_subject(subject):
    if not isinstance(subject, dict):
        return False
    required = {"iss_sub": ("iss", "sub"), "email": ("email",), "opaque": ("id",)}.get(subject.get("format"))
    if subject.get("format") == "complex":
        return _valid_subject(subject.get("user"))
    return required is not None and all(isinstance(subject.get(k), str) and subject[k] for k in required)


def change_subjects(client, body, *, included):
    """SSF 1.0 §8.1.3: a rule per subject, the latest for a subject replacing the earlier."""
    if not isinstance(body, dict) or not body.get("stream_id"):
        raise _stream_error("Stream ID is required")
    stream = own_stream(client, body["stream_id"])
    subject = _subject(body)
    with transaction.atomic():
        stream = SsfStream.objects.select_for_update().get(pk=stream.pk)
        stream.subjects = [r for r in stream.subjects if r["subject"] != subject] + [
            {"subject": subject, "included": included}]
        stream.save(update_fields=["subjects", "updated_at"])


def verify(client, body):
    """SSF 1.0 §8.1.4.2: a verification SET about the stream itself, with the receiver's state."""
    body = body if isinstance(body, dict) else {}
    stream = own_stream(client, body.get("stream_id"), implied=True)
    state = body.get("state")
    if state is not None and not isinstance(state, str):
        raise SsfRefused(400, "stream_verification_error", "state is a string")
    # SSF 1.0 §8.1.4.2: more often than min_verification_interval may be a 429; the mark is in the
    # shared cache, so every node counts the same window.
    now = time.time()
    if not cache.add(f"ssf-verify:{stream.id}", now + MIN_VERIFICATION_INTERVAL, timeout=MIN_VERIFICATION_INTERVAL):
        wait = max(int((cache.get(f"ssf-verify:{stream.id}") or now) - now), 1)
        raise SsfRefused(429, "too_many_requests", f"Wait at least {wait} seconds before triggering another "
                                                   "verification")
    if stream.status == SsfStream.DISABLED:
        return
    members = {"state": state} if state is not None else {}
    with transaction.atomic():
        events.write_set(stream, events.VERIFICATION, {"format": "opaque", "id": stream.id}, members, timezone.now())


def _poll_request(body):
    if not isinstance(body, dict):
        raise SsfRefused(400, "invalid_request", "the poll request is a JSON object")
    limit, wait = body.get("maxEvents", POLL_LIMIT), not body.get("returnImmediately", False)
    ack, errs = body.get("ack", []), body.get("setErrs", {})
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise SsfRefused(400, "invalid_request", "maxEvents is a non-negative integer")
    if not isinstance(ack, list) or not all(isinstance(j, str) for j in ack):
        raise SsfRefused(400, "invalid_request", "ack is a list of jti")
    if not isinstance(errs, dict) or not all(isinstance(v, dict) for v in errs.values()):
        raise SsfRefused(400, "invalid_request", "setErrs maps a jti to an error object")
    return min(limit, POLL_LIMIT), wait and limit > 0, ack, errs


def poll(stream, body):
    """RFC 8936 §2.4: acknowledge (``ack``: delivered, gone from later polls) and report errors
    (``setErrs``: failed with the receiver's error), then the held SETs, oldest first, while the
    stream is enabled. Without ``returnImmediately`` an empty answer waits up to
    ``LONG_POLL_SECONDS`` for a SET."""
    if not stream.polled:
        raise SsfRefused(404)
    limit, wait, ack, errs = _poll_request(body)
    now = timezone.now()
    if ack:
        _pending(stream).filter(message_id__in=ack).update(state=Delivery.DELIVERED, last_status=200, last_error="")
    for jti, err in errs.items():
        error = f"{err.get('err', '')}: {err.get('description', '')}"[:255]
        _pending(stream).filter(message_id=jti).update(state=Delivery.FAILED, last_error=error)
    deadline = now + timedelta(seconds=LONG_POLL_SECONDS)
    while True:
        stream.refresh_from_db(fields=["status"])
        rows = [] if stream.status != SsfStream.ENABLED or not limit else list(
            _pending(stream).order_by("created_at", "pk").values_list(
                "message_id", "message__payload", "message__bodies", "format")[:limit + 1])
        if rows or not wait or timezone.now() >= deadline:
            break
        time.sleep(0.25)
    sets = {jti: payloads.body_of(payload, bodies, fmt) for jti, payload, bodies, fmt in rows[:limit]}
    return {"sets": sets, "moreAvailable": len(rows) > limit}
