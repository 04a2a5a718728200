"""The sending side of a worker process: two lanes of sends on one event loop, and one writer.

The healthy lane sends for endpoints that answer; the slow lane for endpoints demoted after
requests that got no answer (until they answer again). Each lane bounds the sends it holds, so
endpoints that time out can only ever take the slow lane's room, and no thread that hands
deliveries to the lanes waits on a receiver. Every send of the process runs on one event loop
thread (``Client``: kept-alive connections per checked address), not on a thread of its own:
64 threads handing work to each other through the GIL cost more than the requests
(docs/decisions/0111-webhook-sends-on-an-event-loop.md). Results go to one writer
thread that records them in bulk every few milliseconds (``delivery.record``).

In a worker, one puller thread takes the deliveries handed off to every worker from Redis
(``serve``; ``webhooks.dispatch.take``), a batch at a time, and gives them to one claimer thread,
which merges them with the deliveries this process found due itself into one claim and keeps its
database connection (decision 0119). Freed slots go to one releaser thread, which frees those of
sends ended together in one Redis call. See docs/decisions/0104-webhook-delivery-cost.md.

A process that dies with sends in flight leaves their rows ``sending`` under a lease; the
sweeper retakes them when the lease runs out (at least once).
"""
import asyncio
import collections
import functools
import logging
import os
import queue
import ssl
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import connection
from django.utils import timezone
from opentelemetry import propagate, trace

from realms.http import outbound

from . import conf, limits
from .errors import WebhooksError
from .models import Endpoint

logger = logging.getLogger("idp.webhooks")

_STOP = object()
MAX_FLUSH = 500
MAX_CLAIM = 500  # ids merged into one claim
RELEASE_GATHER = 0.002  # seconds a freed slot waits for others ended meanwhile (one Redis call)
IDLE_PER_TARGET = 32  # kept-alive connections per checked address, as realms.http.outbound keeps


class NoAnswer(WebhooksError):
    """The receiver gave no usable answer (connection refused or dropped, timeout, not HTTP);
    the message names the failure as urllib3 does (``ConnectTimeoutError``, ...)."""


@functools.cache
def _tls_context(ca_bundle):
    return ssl.create_default_context(cafile=ca_bundle or None)


class Client:
    """HTTP/1.1 to receivers from one event loop, under ``realms.http.outbound``'s rules for a
    prepared target: the connection goes to the checked address while TLS sends SNI and verifies
    the certificate for the host name, no redirects followed, no retries, a connect timeout and
    a deadline for the answer, at most ``body_limit`` bytes of it read. Connections are kept
    alive per checked address; one not read to its end is closed."""

    def __init__(self):
        self.idle = {}  # (scheme, address, port, host, CA bundle) -> [(reader, writer)]

    async def request(self, method, target, body, headers, *, timeout, connect_timeout, body_limit):
        if not settings.IDP_TRACING_ENABLED:
            return await self._request(method, target, body, headers, timeout, connect_timeout, body_limit)
        # As realms.http.outbound traces its calls: a client span, its context passed on.
        with trace.get_tracer("idp.outbound").start_as_current_span(method, kind=trace.SpanKind.CLIENT, attributes={
                "http.request.method": method, "server.address": target.host, "server.port": target.port}) as span:
            headers = {**headers}
            propagate.inject(headers)
            resp = await self._request(method, target, body, headers, timeout, connect_timeout, body_limit)
            span.set_attribute("http.response.status_code", resp.status)
            return resp

    async def _request(self, method, target, body, headers, timeout, connect_timeout, body_limit):
        started = time.monotonic()
        ca_bundle = outbound._setting("IDP_OUTBOUND_CA_BUNDLE")
        key = (target.scheme, target.address, target.port, target.host, ca_bundle)
        idle = self.idle.setdefault(key, [])
        while idle:
            reader, writer = idle.pop()
            if not reader.at_eof() and not writer.is_closing():  # not closed by the receiver meanwhile
                break
            writer.close()
        else:
            tls = target.scheme == "https"
            try:
                async with asyncio.timeout(min(timeout, connect_timeout or timeout)):
                    reader, writer = await asyncio.open_connection(
                        target.address, target.port, ssl=_tls_context(ca_bundle) if tls else None,
                        server_hostname=target.host if tls else None)
            except TimeoutError:
                raise NoAnswer("ConnectTimeoutError") from None
            except (OSError, ssl.SSLError) as exc:
                raise NoAnswer(exc.__class__.__name__ if isinstance(exc, ssl.SSLError) else "NewConnectionError") \
                    from None
        head = "".join(f"{name}: {value}\r\n" for name, value in {
            "Host": outbound._host_header(target), "User-Agent": outbound.USER_AGENT, **headers,
            "Content-Length": len(body or b"")}.items())
        reusable = False
        try:
            async with asyncio.timeout(timeout):
                writer.write(f"{method} {target.path} HTTP/1.1\r\n{head}\r\n".encode("latin-1") + (body or b""))
                status, resp_headers, resp_body, reusable = await _read_response(reader, body_limit)
        except TimeoutError:
            raise NoAnswer("ReadTimeoutError") from None
        except (OSError, ValueError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            raise NoAnswer("ProtocolError") from None
        finally:
            if reusable and len(idle) < IDLE_PER_TARGET:
                idle.append((reader, writer))
            else:
                writer.close()
        return outbound.Response(status, resp_headers, resp_body, int((time.monotonic() - started) * 1000))

    def close(self):
        for idle in self.idle.values():
            for _, writer in idle:
                writer.close()
        self.idle.clear()


async def _read_response(reader, body_limit):
    """(status, headers, at most ``body_limit`` bytes of the body, whether the connection may be
    used again: HTTP/1.1, not closing, the body read to its end)."""
    while True:
        lines = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        version, status = lines[0].split(" ", 2)[:2]
        status = int(status)
        if not 100 <= status < 200:  # an interim answer (100 Continue) is followed by the real one
            break
    headers = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    keep = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body, complete = await _read_chunked(reader, body_limit)
    elif "content-length" in headers:
        length = int(headers["content-length"])
        body = await reader.readexactly(min(length, body_limit))
        complete = length <= body_limit
    elif status in (204, 304):
        body, complete = b"", True
    else:  # delimited by the end of the connection
        body, complete, keep = b"", False, False
        while len(body) < body_limit and (chunk := await reader.read(body_limit - len(body))):
            body += chunk
    return status, headers, body, keep and complete


async def _read_chunked(reader, body_limit):
    body = b""
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
        if not size:
            while await reader.readuntil(b"\r\n") != b"\r\n":  # trailers
                pass
            return body, True
        if len(body) + size > body_limit:
            return body + await reader.readexactly(body_limit - len(body)), False
        body += await reader.readexactly(size)
        await reader.readexactly(2)


@dataclass(frozen=True)
class Work:
    """What the lanes call back into ``webhooks.delivery`` (which sits above this module and
    hands its functions in): claim ids and start their sends (returns the ids sent), send one
    job with a ``Client`` (a coroutine, run on the lanes' loop), the result of a job not sent,
    record results in bulk, pull waiting deliveries of an endpoint, an endpoint's slot limit."""

    claim: object
    send: object
    unsent: object
    record: object
    pump: object
    slot_limit: object


@dataclass
class _Pull:
    """A released slot found deliveries of this endpoint waiting: the writer pulls them."""

    endpoint: object


class Lane:
    """A bound on the sends a lane holds (in flight on the lanes' loop)."""

    def __init__(self, capacity):
        self.capacity = capacity
        self.used = 0
        self.cond = threading.Condition()
        self.waiting = set()  # endpoints whose deliveries found no room here

    def wait_for_room(self, timeout):
        """True once the lane holds fewer sends than its capacity (False after ``timeout``)."""
        with self.cond:
            return self.cond.wait_for(lambda: self.used < self.capacity, timeout)

    def reserve(self, n):
        """Room for up to ``n`` sends, without waiting; returns how many."""
        with self.cond:
            granted = max(0, min(n, self.capacity - self.used))
            self.used += granted
            return granted

    def take(self, n=1):
        """Room for sends past the gate (a claimed batch, a send handed over from the healthy
        lane): may exceed the capacity by what is already claimed, never by more."""
        with self.cond:
            self.used += n

    def release(self, n=1):
        if n:
            with self.cond:
                self.used -= n
                self.cond.notify_all()

    def free(self):
        with self.cond:
            return self.capacity - self.used

    def wait_idle(self, timeout):
        with self.cond:
            return self.cond.wait_for(lambda: self.used <= 0, timeout)


class Lanes:
    def __init__(self, work):
        self.work = work
        self.fast = Lane(conf.get("IDP_WEBHOOK_SENDER_SENDS"))
        self.slow = Lane(conf.get("IDP_WEBHOOK_SLOW_LANE_SENDS"))
        self.client = Client()
        self.loop = asyncio.new_event_loop()
        self.tasks = set()  # the sends in flight (the loop keeps only weak references)
        self.sender = threading.Thread(target=self.loop.run_forever, name="webhooks-sender", daemon=True)
        self.sender.start()
        self.results = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.granting = threading.Lock()  # held from a grant of slots to its sends in ``active``
        self.active = {}  # endpoint id -> sends of this process holding one of its slots
        self.parked = {}  # endpoint id -> deque of claimed jobs waiting for one of those slots
        self.started = {}  # delivery id -> (endpoint id, monotonic start) of healthy-lane sends
        self.demoted = {}  # endpoint id -> monotonic time until which this process sends it slow
        self.claims = queue.SimpleQueue()  # (ids, Future) from the puller and this process's own pulls
        self.freed = queue.SimpleQueue()  # (endpoint, slot) of ended sends
        self.writer = threading.Thread(target=self._write_forever, name="webhooks-writer", daemon=True)
        self.writer.start()
        self.claimer = threading.Thread(target=self._claim_forever, name="webhooks-claimer", daemon=True)
        self.releaser = threading.Thread(target=self._release_forever, name="webhooks-releaser", daemon=True)
        self.claimer.start()
        self.releaser.start()
        self.stopping = threading.Event()
        self.puller = None  # the thread taking the deliveries handed to every worker (``serve``)

    def serve(self, take):
        """Claim, until the lanes stop, what ``take(n)`` hands this process (up to ``n`` ids,
        after waiting a moment for them): a worker's share of the deliveries handed to every
        worker. One batch at a time, and the next taken only once it is claimed: what this
        process cannot claim yet (its healthy lane full) stays where any other worker takes it."""
        self.puller = threading.Thread(target=self._pull_forever, args=(take,), name="webhooks-puller", daemon=True)
        self.puller.start()

    def _pull_forever(self, take):
        while not self.stopping.is_set():
            try:
                ids = take(MAX_CLAIM)
            except Exception:  # Redis away: what was handed off waits there, or for the sweeper
                logger.exception("webhooks: could not take deliveries from Redis")
                self.stopping.wait(1.0)
                continue
            if ids:
                try:
                    self.claim(ids)
                except Exception:  # the rows stay pending; the sweeper dispatches them again
                    logger.exception("webhooks: could not claim %d deliveries", len(ids))

    def claim(self, ids):
        """Claim ``ids`` and start their sends, on the claimer thread; returns how many started."""
        done = Future()
        self.claims.put((ids, done))
        return done.result()

    def _claim_forever(self):
        while True:
            first = self.claims.get()
            if first is _STOP:
                break
            batch, size = [first], len(first[0])
            while size < MAX_CLAIM:
                try:
                    item = self.claims.get_nowait()
                except queue.Empty:
                    break
                if item is _STOP:
                    self.claims.put(_STOP)
                    break
                batch.append(item)
                size += len(item[0])
            try:
                sent = self.work.claim([i for ids, _ in batch for i in ids], self)
            except Exception as exc:  # the rows stay pending; the sweeper dispatches them again
                connection.close()
                for _, done in batch:
                    done.set_exception(exc)
                continue
            for ids, done in batch:
                done.set_result(sum(1 for i in ids if i in sent))
        # Stopped: batches still queued stay pending in the database, for the sweeper.
        while True:
            try:
                item = self.claims.get_nowait()
            except queue.Empty:
                break
            if item is not _STOP:
                item[1].set_result(0)
        connection.close()

    def _release_forever(self):
        while True:
            item = self.freed.get()
            if item is _STOP:
                break
            time.sleep(RELEASE_GATHER)
            batch = [item]
            while True:
                try:
                    item = self.freed.get_nowait()
                except queue.Empty:
                    break
                if item is _STOP:
                    self.freed.put(_STOP)
                    break
                batch.append(item)
            endpoints = {endpoint.id: endpoint for endpoint, _ in batch}
            try:
                waiting = limits.release_many([(endpoint.id, slot) for endpoint, slot in batch])
            except Exception:  # Redis away: the slots free themselves when their leases run out
                logger.exception("webhooks: could not release %d slots", len(batch))
                continue
            for endpoint_id in waiting:
                self.results.put(_Pull(endpoints[endpoint_id]))

    def submit(self, jobs):
        """Start sends that hold a slot of their endpoint (one wake-up of the loop for all)."""
        if not jobs:
            return
        with self.lock:
            for job in jobs:
                self.active[job.endpoint.id] = self.active.get(job.endpoint.id, 0) + 1
        self.loop.call_soon_threadsafe(self._start, [(self.slow if job.slow else self.fast, job) for job in jobs])

    def _start(self, sends):
        for lane, job in sends:
            task = self.loop.create_task(self._send(lane, job))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    def is_slow(self, endpoint, now):
        return endpoint.slow(now) or self.demoted.get(endpoint.id, 0) > time.monotonic()

    def park(self, jobs):
        """Jobs refused a slot may wait for the slot of one of this process's sends to the same
        endpoint (at most one waiter per send, so a waiter starts within one send's time, well
        inside its lease). Never for demoted endpoints, nor rate-limited or slowed-down ones
        (their every request is counted). Returns the jobs that could not wait."""
        rest = []
        now = timezone.now()
        with self.lock:
            for job in jobs:
                queue_ = self.parked.setdefault(job.endpoint.id, collections.deque())
                if (self.active.get(job.endpoint.id, 0) > len(queue_) and not job.endpoint.rate_limit
                        and not job.endpoint.throttled(now) and not self.is_slow(job.endpoint, now)):
                    queue_.append(job)
                else:
                    rest.append(job)
        return rest

    async def _send(self, lane, job):
        while job is not None:
            if lane is self.fast:
                self.started[job.delivery_id] = (job.endpoint.id, time.monotonic())
            try:
                result = await self.work.send(job, self.client)
            except Exception:  # a bug must not leave the row sending until its lease runs out
                logger.exception("webhooks: sending delivery %s failed", job.delivery_id)
                result = self.work.unsent(job, "internal error while sending")
            finally:
                self.started.pop(job.delivery_id, None)
            if result.success:
                self.demoted.pop(job.endpoint.id, None)
            with self.lock:
                waiting = self.parked.get(job.endpoint.id)
                following = waiting.popleft() if waiting else None
                if following is None:
                    self.active[job.endpoint.id] -= 1
                    if not self.active[job.endpoint.id]:
                        del self.active[job.endpoint.id]
                        self.parked.pop(job.endpoint.id, None)
            if following is not None:
                following.slot, result.job.slot = job.slot, ""  # the slot passes on, no Redis call
            elif job.slot:
                # Freed by the releaser within milliseconds, not after the writer's database
                # writes: a slot held past its send starves the endpoint.
                self.freed.put((job.endpoint, job.slot))
                result.job.slot = ""
            self.results.put(result)
            if following is not None and lane is self.fast and self.is_slow(following.endpoint, timezone.now()):
                # Demoted meanwhile: its next send must not hold a healthy-lane thread.
                following.slow = True
                self.slow.take()
                self._start([(self.slow, following)])
                following = None
            job = following
        lane.release()

    def _stop_loop(self):
        self.client.close()
        self.loop.stop()

    def _demote_stuck(self):
        """Endpoints whose healthy-lane send has waited ``IDP_WEBHOOK_SLOW_AFTER`` for an answer
        go to the slow lane now (this process at once, the others at their next claim), not
        after the full timeout."""
        limit = time.monotonic() - conf.get("IDP_WEBHOOK_SLOW_AFTER")
        stuck = {endpoint_id for endpoint_id, started in list(self.started.values()) if started < limit}
        for endpoint_id in stuck - {e for e, until in self.demoted.items() if until > time.monotonic()}:
            seconds = conf.get("IDP_WEBHOOK_SLOW_LANE_SECONDS")
            self.demoted[endpoint_id] = time.monotonic() + seconds
            Endpoint.objects.filter(pk=endpoint_id).update(
                slow_until=timezone.now() + timedelta(seconds=seconds))
            logger.info("webhooks: endpoint %s is slow to answer; sent by the slow lane", endpoint_id)

    def _write_forever(self):
        interval = conf.get("IDP_WEBHOOK_WRITE_INTERVAL")
        stopping = False
        while not stopping:
            try:
                item = self.results.get(timeout=0.5)
            except queue.Empty:
                item = None
            if item is _STOP:
                break
            try:
                self._demote_stuck()
            except Exception:
                logger.exception("webhooks: could not demote slow endpoints")
                connection.close()
            if item is None:
                continue
            batch = [item]
            deadline = time.monotonic() + interval
            while len(batch) < MAX_FLUSH:
                try:
                    item = self.results.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    break
                if item is _STOP:
                    stopping = True
                    break
                batch.append(item)
            try:
                self.work.record([r for r in batch if not isinstance(r, _Pull)])
                now = timezone.now()
                for endpoint in {p.endpoint.id: p.endpoint for p in batch if isinstance(p, _Pull)}.values():
                    self.work.pump(endpoint.id, self.work.slot_limit(endpoint, now))
                self._pull_for_slow_lane()
            except Exception:  # the rows stay sending; their leases run out and they are sent again
                logger.exception("webhooks: could not record %d delivery results", len(batch))
                connection.close()
        connection.close()

    def _pull_for_slow_lane(self):
        """Endpoints refused for want of room in the slow lane get a pull when room frees."""
        for _ in range(min(self.slow.free(), len(self.slow.waiting))):
            try:
                endpoint_id = self.slow.waiting.pop()
            except KeyError:
                return
            self.work.pump(endpoint_id)

    def shutdown(self):
        """Finish the sends in flight (each is bounded by the timeout), record them, stop."""
        self.stopping.set()
        if self.puller is not None:
            self.puller.join(timeout=30)  # its last batch is claimed (and sent) like the others
        self.claims.put(_STOP)
        self.claimer.join(timeout=30)
        for lane in (self.fast, self.slow):
            lane.wait_idle(conf.get("IDP_WEBHOOK_TIMEOUT") + 10)
        self.loop.call_soon_threadsafe(self._stop_loop)
        self.sender.join(timeout=10)
        if not self.sender.is_alive():
            self.loop.close()
        self.freed.put(_STOP)
        self.releaser.join(timeout=30)  # its pulls reach the writer before the writer stops
        self.results.put(_STOP)
        self.writer.join(timeout=conf.get("IDP_WEBHOOK_TIMEOUT") + 10)


_lock = threading.Lock()
_lanes = None
_pid = None


def lanes(work):
    """This process's lanes, started on first use (after a fork: new ones for the child)."""
    global _lanes, _pid
    with _lock:
        if _lanes is None or _pid != os.getpid():
            _lanes, _pid = Lanes(work), os.getpid()
        return _lanes


def claim_here(ids):
    """Hand ``ids`` to this process's claimer without waiting for it; False when this process
    runs no lanes."""
    with _lock:
        current = _lanes if _pid == os.getpid() else None
    if current is None:
        return False
    current.claims.put((ids, Future()))
    return True


def shutdown():
    global _lanes
    with _lock:
        current, _lanes = (_lanes, None) if _pid == os.getpid() else (None, None)
    if current is not None:
        current.shutdown()
