"""Delivering webhooks in batches: claim, sign and send, record.

A batch of delivery ids (the deliveries of one committed event, a sweep, a redelivery, a pull
after a slot freed) is claimed in one statement, then its endpoints' state read, takes the
endpoints' concurrency slots in one Redis call and goes to this process's sender lanes
(``webhooks.sender``): the healthy lane, or the slow lane for endpoints demoted after requests
that got no answer. Results are written together, one stream of log rows and one update per
outcome, then the slots are released in one call and endpoints with waiting deliveries are
pulled. Every endpoint is its own queue (its pending rows) with its own concurrency limit, so a
slow or dead endpoint holds at most ``max_concurrency`` requests and never the healthy lane's
threads for long. See docs/decisions/0008-webhook-delivery.md.
"""
import asyncio
import base64
import email.utils
import logging
import random
import secrets
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone
from opentelemetry import trace

from realms.data import rows
from realms.http.outbound import Target, TargetRefused, prepare, request

from . import conf, dispatch, limits, metrics, notify, ordering, payloads, receiver, sender
from .models import Delivery, DeliveryAttempt, Endpoint, EndpointSecret, new_message_id
from .signing import InvalidSecret, Signer

logger = logging.getLogger("idp.webhooks")

USER_AGENT = "idp-webhooks/1"
SLOW_DOWN_STATUSES = (429, 502, 504)
MAX_THROTTLE_SECONDS = 3600


def _lease_seconds():
    return conf.get("IDP_WEBHOOK_TIMEOUT") + conf.get("IDP_WEBHOOK_LEASE_MARGIN")


@dataclass
class Job:
    delivery_id: int
    message_id: str
    payload: bytes
    attempts: int
    step: int
    endpoint: Endpoint  # as the claim read it (realms.data.rows.fetch)
    signer: Signer | None
    signer_error: str = ""
    slot: str = ""
    slow: bool = False  # sent by the slow lane
    format: str = ""  # webhooks.payloads: the body's kind, version and envelope
    subject: str = ""  # on an ordered endpoint (webhooks.ordering)
    target: Target | None = None  # the endpoint's checked address (None: refused, see ``refused``)
    refused: str = ""


@dataclass
class Result:
    job: Job
    started: datetime
    duration_ms: int
    status: int | None
    error: str
    body: bytes
    retry_after: int | None
    no_answer: bool

    @property
    def success(self):
        return self.status is not None and 200 <= self.status < 300


# The claim in one statement, the same on both databases but for the lock (SQLite has one writer):
# the rows are found by primary key alone, locked (skipping those another worker holds), and
# their state checked on the locked copy. Given a condition on the table's state, the planner
# may scan the partial index of all pending rows (a dead endpoint's growing backlog) instead of
# probing a hundred ids, whenever its statistics say few rows are pending (measured: 2.5 ms
# instead of 0.24 ms per claim). Due rows of unordered endpoints become sending under a lease;
# every pending row locked is no longer dispatched (a row not due is the sweeper's again, one
# with a subject is held or sent by ``_claim``). Built by hand: the ORM's query compiler cost the
# worker more than PostgreSQL spent running the claim (decision 0115).
_CLAIM = """WITH locked AS MATERIALIZED (
    SELECT id AS locked_id, state AS locked_state FROM webhooks_delivery WHERE id IN ({ids}){lock})
UPDATE webhooks_delivery SET
    state = CASE WHEN next_attempt_at <= %s AND subject = '' THEN 'sending' ELSE state END,
    lease_until = CASE WHEN next_attempt_at <= %s AND subject = '' THEN %s ELSE lease_until END,
    dispatched_at = NULL
FROM locked WHERE id = locked_id AND locked_state = 'pending'
RETURNING id, state, subject, next_attempt_at <= %s, message_id, attempts, step, format, endpoint_id,
    (SELECT payload FROM webhooks_message WHERE webhooks_message.id = webhooks_delivery.message_id),
    (SELECT bodies FROM webhooks_message WHERE webhooks_message.id = webhooks_delivery.message_id)"""


def _claim(ids, now):
    """Due pending rows among ``ids`` -> sending, under a lease; rows another worker holds are
    skipped; pending rows not due yet (a retry scheduled meanwhile, or a clock behind the
    producer's) are left to the sweeper; rows of ordered endpoints behind an unfinished earlier
    one of their subject are held (``ordering.hold``). One transaction; then the endpoints' state."""
    lease_until = now + timedelta(seconds=_lease_seconds())
    when, until = connection.ops.adapt_datetimefield_value(now), connection.ops.adapt_datetimefield_value(lease_until)
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(_CLAIM.format(ids=", ".join(["%s"] * len(ids)), lock=rows.skip_locked()),
                           [*ids, when, when, until, when])
            locked = cursor.fetchall()
        # Ordered endpoints only (a subject): one behind an unfinished earlier one of its subject waits.
        ordered = [r[0] for r in locked if r[2] and r[3]]
        held = ordering.hold(ordered, now, _lease_seconds())
        if len(held) < len(ordered):
            Delivery.objects.filter(pk__in=[pk for pk in ordered if pk not in held]).update(
                state=Delivery.SENDING, lease_until=lease_until)
    claimed = [r for r in locked if r[3] and (r[1] == Delivery.SENDING or (r[2] and r[0] not in held))]
    endpoint_ids = list({r[8] for r in claimed})
    endpoints = {e.id: e for e in rows.fetch(Endpoint, f"id IN ({', '.join(['%s'] * len(endpoint_ids))})",
                                             endpoint_ids)} if endpoint_ids else {}
    # Written by an event that raced its endpoint's deletion (no constraint stops it: decision 0116).
    gone = [r[0] for r in claimed if r[8] not in endpoints]
    if gone:
        Delivery.objects.filter(pk__in=gone).delete()
        claimed = [r for r in claimed if r[8] in endpoints]
    jobs = [Job(pk, message_id, payloads.body_of(payload, bodies, fmt).encode(), attempts, step, endpoints[endpoint_id],
                None, format=fmt, subject=subject)
            for pk, _, subject, _, message_id, attempts, step, fmt, endpoint_id, payload, bodies in claimed]
    targets = {}
    for job in jobs:
        try:
            job.signer = _signer(job.endpoint, now)
        except InvalidSecret as exc:
            job.signer_error = str(exc)
        # Resolved and checked once per endpoint and claim, here: a slow resolver holds this
        # thread, never the loop that sends for every endpoint.
        if job.endpoint.id not in targets:
            try:
                targets[job.endpoint.id] = (prepare(job.endpoint.url), "")
            except TargetRefused as exc:
                targets[job.endpoint.id] = (None, str(exc))
        job.target, job.refused = targets[job.endpoint.id]
    return jobs


def _back(jobs, when=None):
    """Claimed but not sent: pending again. Refused a slot (``when`` None): the endpoint's pull
    takes them when a slot frees, so they stay marked dispatched and the sweeper leaves them
    alone until ``IDP_WEBHOOK_REDISPATCH_AFTER`` (a backstop; re-claiming a dead endpoint's
    whole backlog every sweep would cost the healthy ones). Over the rate: due at ``when``, for
    the sweeper."""
    if not jobs:
        return
    changes = {"state": Delivery.PENDING, "lease_until": None}
    if when is None:
        changes["dispatched_at"] = timezone.now()
    else:
        changes.update(next_attempt_at=when, dispatched_at=None)
    Delivery.objects.filter(pk__in=[j.delivery_id for j in jobs], state=Delivery.SENDING).update(**changes)


def process(ids, inline=False):
    """Claim and send a batch of deliveries; returns how many sends started. ``inline``: send and
    record in this thread (tests, tools); otherwise this process's claimer claims them (merged
    with the batches waiting beside them) and hands the sends to the lanes."""
    ids = list(dict.fromkeys(ids))
    if inline:
        return len(_claim_and_start(ids, None))
    return sender.lanes(WORK).claim(ids)


def _claim_and_start(ids, lanes):
    """Claim ``ids``, take their slots and start the sends (on ``lanes``, or here and now without
    them); returns the ids of the deliveries sent."""
    if lanes and not lanes.fast.wait_for_room(timeout=10.0):
        # The healthy lane stayed full: the batch waits in the database for the next sweep.
        Delivery.objects.filter(pk__in=ids, state=Delivery.PENDING).update(dispatched_at=None)
        return set()
    now = timezone.now()
    jobs = _claim(ids, now) if ids else []
    disabled = [j for j in jobs if not j.endpoint.enabled]
    if disabled:
        Delivery.objects.filter(pk__in=[j.delivery_id for j in disabled], state=Delivery.SENDING).update(
            state=Delivery.FAILED, last_error="endpoint disabled", lease_until=None)
    jobs = [j for j in jobs if j.endpoint.enabled]
    slow_room = 0
    if lanes:
        for j in jobs:
            j.slow = lanes.is_slow(j.endpoint, now)
        slow_jobs = [j for j in jobs if j.slow]
        slow_room = lanes.slow.reserve(len(slow_jobs))
        # No room in the slow lane: back to the database; a slow send that ends pulls them.
        lanes.slow.waiting.update(j.endpoint.id for j in slow_jobs[slow_room:])
        _back(slow_jobs[slow_room:])
        jobs = [j for j in jobs if not j.slow] + slow_jobs[:slow_room]
    if lanes:
        # From the grant of slots to their sends counted as this process's, one thread of the
        # process at a time: another thread refused a slot meanwhile would find no send of this
        # process to wait for, and give its deliveries back to the database (``park``).
        with lanes.granting:
            go, no_slot, rate_limited = _take_slots(jobs, now)
            lanes.fast.take(sum(1 for j in go if not j.slow))
            lanes.slow.release(slow_room - sum(1 for j in go if j.slow))
            lanes.submit(go)
            no_slot = lanes.park(no_slot)
    else:
        go, no_slot, rate_limited = _take_slots(jobs, now)
    _back(no_slot)
    _back(rate_limited, now + timedelta(seconds=1))
    if no_slot:
        refused = {j.endpoint.id: j.endpoint for j in no_slot}.values()
        for endpoint_id in limits.rewait([(ep.id, slot_limit(ep, now)) for ep in refused]):
            pump(endpoint_id, 1)
    if not lanes:
        record(_run_inline(_send_here(go)))
    return {j.delivery_id for j in go}


def _run_inline(coroutine):
    """``asyncio.run``, also for a caller whose thread runs an event loop already (a test driving
    a browser with Playwright's synchronous API), where asyncio.run refuses: there on a thread of
    its own, the caller waiting for it as for any inline send."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


async def _send_here(jobs):
    """The inline sends, one after the other, on connections of their own."""
    client = sender.Client()
    try:
        return [await send(job, client) for job in jobs]
    finally:
        client.close()


def slot_limit(ep, now):
    """Slots of an endpoint: one while slowed down, a few
    while in the slow lane (requests there mostly wait out the timeout; the lane's threads are
    shared by every demoted endpoint), ``max_concurrency`` otherwise."""
    if ep.throttled(now):
        return 1
    limit = max(ep.max_concurrency, 1)
    return min(limit, conf.get("IDP_WEBHOOK_SLOW_LANE_CONCURRENCY")) if ep.slow(now) else limit


def hand_off(deliveries, endpoints):
    """After the commit of an event: its deliveries to the workers, except those of endpoints in
    the slow lane (no answer lately) with every slot taken. Those stay in the database, the
    endpoint flagged waiting, and the send that frees one of its slots pulls them. A dead
    endpoint thus costs the workers nothing per event; claiming its deliveries only to give
    them back, event after event, was what the healthy endpoints paid for it. ``endpoints``:
    the models, with ``slow_until``, ``throttled_until`` and ``max_concurrency`` loaded."""
    now = timezone.now()
    slow = [(e.pk, slot_limit(e, now)) for e in endpoints if e.slow(now)]
    held = {pk for pk, _ in slow} - set(limits.rewait(slow))
    dispatch.deliveries([d.pk for d in deliveries if d.endpoint_id not in held])


def _take_slots(jobs, now):
    """Per endpoint at most ``max_concurrency`` in flight (one when slowed down) and at most
    ``rate_limit`` per second (one when slowed down); all endpoints of the batch in one call."""
    by_endpoint = defaultdict(list)
    for j in jobs:
        by_endpoint[j.endpoint.id].append(j)
    wants = []
    for group in by_endpoint.values():
        ep = group[0].endpoint
        wants.append((ep.id, len(group), slot_limit(ep, now), 1 if ep.throttled(now) else ep.rate_limit))
    grants = limits.acquire_many(wants, _lease_seconds()) if wants else []
    go, no_slot, rate_limited = [], [], []
    for group, (tokens, limited) in zip(by_endpoint.values(), grants):
        for j, token in zip(group, tokens):
            j.slot = token
        go += group[:len(tokens)]
        rate_limited += group[len(tokens):len(tokens) + limited]
        no_slot += group[len(tokens) + limited:]
    return go, no_slot, rate_limited


def attempt(delivery_id):
    """Run one attempt of a delivery now, in this thread, if it is due and its endpoint has a
    free slot (tests and tools; workers use ``process``)."""
    process([delivery_id], inline=True)


def pump(endpoint_id, n=1):
    """Dispatch up to ``n`` of the endpoint's due deliveries (a slot freed): first those given
    back for want of a slot, then any other pending one (a duplicate claim is harmless). Those
    left behind keep the endpoint flagged waiting, before the pulled ones can end, so that the
    release of their slots pulls the next ones (the release cleared the flag)."""
    now = timezone.now()
    with transaction.atomic():
        ids = list(Delivery.objects.select_for_update(skip_locked=True)
                   .filter(endpoint_id=endpoint_id, state=Delivery.PENDING, next_attempt_at__lte=now)
                   .order_by(F("dispatched_at").asc(nulls_first=True), "next_attempt_at")
                   .values_list("pk", flat=True)[:n + 1])
        ids, left_behind = ids[:n], len(ids) > n
        if ids:
            Delivery.objects.filter(pk__in=ids).update(dispatched_at=now)
    if left_behind:
        limits.rewait([(endpoint_id, n)])
    dispatch.deliveries_here(ids)
    return len(ids)


_signers = {}


def _signer(endpoint, now):
    """The endpoint's Signer, cached per process until the endpoint changes (a rotation touches
    it) or the first of its secrets expires."""
    cached = _signers.get(endpoint.id)
    if cached and cached[0] == endpoint.updated_at and (cached[1] is None or cached[1] > now):
        return cached[2]
    secrets = [s for s in EndpointSecret.objects.filter(endpoint_id=endpoint.id)
               if s.expires_at is None or s.expires_at > now]
    expiries = [s.expires_at for s in secrets if s.expires_at]
    signer = Signer([s.secret for s in secrets])
    _signers[endpoint.id] = (endpoint.updated_at, min(expiries) if expiries else None, signer)
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


def call(method, target, body, headers, timeout=None):
    """One request to a receiver under the sender's limits, from a thread (the ownership
    handshake; deliveries go through ``sender.Client``): ``realms.http.outbound``, kept-alive
    connection to the checked address, no redirects; raises ``HTTPError`` when nothing answers."""
    timeout = conf.get("IDP_WEBHOOK_TIMEOUT") if timeout is None else timeout
    return request(method, target, body, {"User-Agent": USER_AGENT, **headers}, timeout=timeout,
                   connect_timeout=conf.get("IDP_WEBHOOK_CONNECT_TIMEOUT"),
                   body_limit=conf.get("IDP_WEBHOOK_RESPONSE_BODY_LIMIT"))


def message_id():
    """A new message's id. With tracing on, it carries the context of the span that wrote the
    event after 12 random bytes (the outbox has no column for it), so every attempt of every
    delivery, however late and whichever worker sends it, joins that trace (``send``)."""
    span = trace.get_current_span().get_span_context() if settings.IDP_TRACING_ENABLED else None
    if span is None or not span.trace_flags.sampled:
        return new_message_id()
    raw = secrets.token_bytes(12) + span.trace_id.to_bytes(16, "big") + span.span_id.to_bytes(8, "big")
    return "msg_" + base64.urlsafe_b64encode(raw).decode()


def _traced_parent(message_id):
    """The context ``message_id`` carries (None for an untraced message's random id)."""
    if len(message_id) != TRACED_ID_LENGTH:
        return None
    raw = base64.urlsafe_b64decode(message_id[4:])
    return trace.set_span_in_context(trace.NonRecordingSpan(trace.SpanContext(
        int.from_bytes(raw[12:28], "big"), int.from_bytes(raw[28:], "big"), is_remote=True,
        trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED))))


TRACED_ID_LENGTH = len("msg_") + 48  # 36 bytes in base64; random ids are 24 characters


async def send(job, client):
    """Sign with a fresh timestamp and POST once with ``client`` (a ``sender.Client``); never
    raises for the receiver's failures."""
    if not settings.IDP_TRACING_ENABLED:
        return await _send(job, client)
    with trace.get_tracer("idp.webhooks").start_as_current_span(
            "webhook delivery", context=_traced_parent(job.message_id), kind=trace.SpanKind.PRODUCER,
            attributes={"webhook.message_id": job.message_id, "webhook.endpoint_id": job.endpoint.id,
                        "webhook.attempt": job.attempts + 1}) as span:
        result = await _send(job, client)
        if result.status is not None:
            span.set_attribute("http.response.status_code", result.status)
        if not result.success:
            span.set_status(trace.Status(trace.StatusCode.ERROR, result.error or None))
        return result


async def _send(job, client):
    started = timezone.now()
    t0 = time.monotonic()
    status, error, body, retry_after, no_answer = None, "", b"", None, False
    try:
        if job.target is None:
            raise TargetRefused(job.refused)
        if job.signer is None:
            raise InvalidSecret(job.signer_error)
        resp = await client.request(
            "POST", job.target, job.payload,
            {"User-Agent": USER_AGENT, **payloads.headers(job.format), **job.signer.headers(job.message_id, job.payload)},
            timeout=conf.get("IDP_WEBHOOK_TIMEOUT"), connect_timeout=conf.get("IDP_WEBHOOK_CONNECT_TIMEOUT"),
            body_limit=conf.get("IDP_WEBHOOK_RESPONSE_BODY_LIMIT"))
        status, body = resp.status, resp.body
        retry_after = retry_after_seconds(resp.headers.get("retry-after"))
    except TargetRefused as exc:
        error = f"refused: {exc}"
    except InvalidSecret as exc:
        error = f"no usable secret: {exc}"
    except sender.NoAnswer as exc:
        error, no_answer = f"{exc}: no answer", True
    return Result(job, started, int((time.monotonic() - t0) * 1000), status, error[:255], body, retry_after, no_answer)


def unsent(job, error):
    """The result of a send that broke inside the sender itself (logged by the caller)."""
    return Result(job, timezone.now(), 0, None, error, b"", None, False)


_ATTEMPT_FIELDS = [DeliveryAttempt._meta.get_field(name) for name in (
    "delivery", "endpoint", "message_id", "number", "started_at", "status", "success", "duration_ms", "error",
    "response_body")]


def record(results):
    """Write a flush of results: log rows in one insert, finished deliveries in one update per
    outcome, retries in one bulk update; then the endpoints' state, then free the slots and
    pull what waited for them."""
    if not results:
        return
    # Slots first: they are free as soon as the answer is in, whatever the database does next.
    waiting = set(limits.release_many([(r.job.endpoint.id, r.job.slot) for r in results if r.job.slot]))
    now = timezone.now()
    # One stream of plain values (COPY on PostgreSQL): the ORM's bulk_create built a model
    # instance and prepared every field of every row, the writer's largest cost (decision 0115).
    rows.insert_values(DeliveryAttempt, _ATTEMPT_FIELDS, [(
        r.job.delivery_id, r.job.endpoint.id, r.job.message_id, r.job.attempts + 1, r.started, r.status, r.success,
        r.duration_ms, r.error, r.body.decode("utf-8", "replace")) for r in results])
    finished, retries, ordered = defaultdict(list), [], []
    for r in results:
        delay = None if r.success or r.status == 410 else next_delay(r.job.step, r.retry_after)
        if delay is None:
            state = Delivery.DELIVERED if r.success else Delivery.FAILED
            finished[(state, r.status, r.error)].append(r.job.delivery_id)
            if r.job.subject:
                ordered.append((r.job, state, r.error))
        else:
            retries.append(Delivery(
                pk=r.job.delivery_id, state=Delivery.PENDING, attempts=r.job.attempts + 1, step=r.job.step + 1,
                next_attempt_at=now + timedelta(seconds=delay), dispatched_at=None, last_status=r.status,
                last_error=r.error, lease_until=None))
    sending = Delivery.objects.filter(state=Delivery.SENDING)  # a row retaken after its lease is not ours
    for (state, status, error), ids in finished.items():
        sending.filter(pk__in=ids).update(state=state, attempts=F("attempts") + 1, last_status=status,
                                          last_error=error, lease_until=None)
    if retries:
        sending.bulk_update(retries, ["state", "attempts", "step", "next_attempt_at", "dispatched_at",
                                      "last_status", "last_error", "lease_until"], batch_size=200)
    if ordered:
        ordering.release(ordered, now)
    try:
        metrics.attempts_recorded({"retry": len(retries), **{
            outcome: sum(len(ids) for (state, _, _), ids in finished.items() if state == delivery_state)
            for outcome, delivery_state in (("delivered", Delivery.DELIVERED), ("failed", Delivery.FAILED))}})
    except Exception:  # Redis away: the counts of this flush are lost, never its results
        logger.warning("webhooks: could not count %d delivery attempts", len(results))
    by_endpoint = defaultdict(list)
    for r in results:
        by_endpoint[r.job.endpoint.id].append(r)
    for group in by_endpoint.values():
        _endpoint_outcome(group[0].job.endpoint, group, now)
    # A freed slot that finds deliveries waiting pulls as many as the endpoint may have in
    # flight; those refused again flag it again, so the next release pulls again.
    for group in by_endpoint.values():
        ep = group[0].job.endpoint
        if ep.id in waiting:
            pump(ep.id, slot_limit(ep, now))


def _endpoint_outcome(ep, results, now):
    """Endpoint state from a flush of its results: any 2xx ends failure, slow-down and demotion;
    410 disables; 429/502/504 slow it down; no answer demotes it to the slow lane; failing for
    days disables it. Writes only on a change."""
    if any(r.success for r in results):
        if ep.failing_since or ep.throttle_step or ep.slow_until:
            Endpoint.objects.filter(pk=ep.id).update(failing_since=None, throttle_step=0, throttled_until=None,
                                                     slow_until=None)
            ep.failing_since = ep.throttled_until = ep.slow_until = None
            ep.throttle_step = 0
        return
    if any(r.status == 410 for r in results):
        disable(Endpoint.objects.select_related("realm").get(pk=ep.id), "the endpoint answered 410 Gone")
        return
    slow_downs = [r for r in results if r.status in SLOW_DOWN_STATUSES]
    if slow_downs:
        step = min(ep.throttle_step, 10)
        retry_after = max(r.retry_after or 0 for r in slow_downs)
        seconds = min(max(conf.get("IDP_WEBHOOK_THROTTLE_SECONDS") * 2 ** step, retry_after), MAX_THROTTLE_SECONDS)
        Endpoint.objects.filter(pk=ep.id).update(throttled_until=now + timedelta(seconds=seconds),
                                                 throttle_step=step + 1)
        ep.throttle_step = step + 1
    if any(r.no_answer for r in results) and not ep.slow(now):
        ep.slow_until = now + timedelta(seconds=conf.get("IDP_WEBHOOK_SLOW_LANE_SECONDS"))
        Endpoint.objects.filter(pk=ep.id).update(slow_until=ep.slow_until)
        logger.info("webhooks: endpoint %s gives no answer; sent by the slow lane until %s", ep.id, ep.slow_until)
    first_failure = min(r.started for r in results)
    if ep.failing_since is None:
        Endpoint.objects.filter(pk=ep.id, failing_since__isnull=True).update(failing_since=first_failure)
        ep.failing_since = first_failure
    if now - ep.failing_since >= timedelta(seconds=conf.get("IDP_WEBHOOK_DISABLE_AFTER")):
        disable(Endpoint.objects.select_related("realm").get(pk=ep.id),
                f"no successful delivery since {ep.failing_since:%Y-%m-%d %H:%M} UTC")


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
        ordering.leave_order(ids)
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
    now = now or timezone.now()
    Delivery.objects.filter(state=Delivery.SENDING, lease_until__lt=now).update(
        state=Delivery.PENDING, next_attempt_at=now, dispatched_at=None, lease_until=None)
    due = Delivery.objects.filter(state=Delivery.PENDING, next_attempt_at__lte=now)
    with transaction.atomic():
        ids = list(due.select_for_update(skip_locked=True).filter(dispatched_at__isnull=True)
                   .order_by("next_attempt_at").values_list("pk", flat=True)[:5000])
        Delivery.objects.filter(pk__in=ids).update(dispatched_at=now)
    dispatch.deliveries(ids)
    # Dispatched long ago and still pending: a lost hand-off, or deliveries waiting for a slot of
    # an endpoint that stays busy (a dead one). Each such endpoint is flagged waiting again and,
    # if a slot is free, pulls up to its limit, like a freed slot does; the rest follow as slots
    # free. A dead endpoint's backlog is not re-claimed wholesale only to be given back.
    stale = now - timedelta(seconds=conf.get("IDP_WEBHOOK_REDISPATCH_AFTER"))
    endpoint_ids = due.filter(dispatched_at__lt=stale).order_by().values_list("endpoint_id", flat=True).distinct()
    endpoints = {e.pk: slot_limit(e, now) for e in Endpoint.objects.filter(pk__in=list(endpoint_ids[:1000]))
                 .only("id", "max_concurrency", "throttled_until", "slow_until")}
    pulled = sum(pump(endpoint_id, endpoints[endpoint_id])
                 for endpoint_id in limits.rewait(list(endpoints.items())))
    return len(ids) + pulled + receiver.sweep(now)


WORK = sender.Work(claim=_claim_and_start, send=send, unsent=unsent, record=record, pump=pump, slot_limit=slot_limit)
