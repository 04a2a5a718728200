"""The sending side of a worker process: two lanes of threads and one writer.

The healthy lane sends for endpoints that answer; the slow lane for endpoints demoted after
requests that got no answer (until they answer again). Each lane has its own threads, so
endpoints that time out can only ever occupy the slow lane's threads, and a Celery task hands
its batch to a lane and returns: no worker thread waits on a receiver. Keep-alive connections
are reused per checked address (``realms.http.outbound``). Results go to one writer thread that
records them in bulk every few milliseconds (``delivery.record``).

The batches of the Celery tasks are claimed by one claimer thread, which merges the batches that
wait into one claim and keeps its database connection (Celery closes a task thread's connection
after every task: a new PostgreSQL backend per event). Freed slots go to one releaser thread,
which frees those of sends ended together in one Redis call. See
docs/decisions/0104-webhook-delivery-cost.md.

A process that dies with sends in flight leaves their rows ``sending`` under a lease; the
sweeper retakes them when the lease runs out (at least once).
"""
import collections
import logging
import os
import queue
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta

from django.db import connection
from django.utils import timezone

from . import conf, limits
from .models import Endpoint

logger = logging.getLogger("idp.webhooks")

_STOP = object()
MAX_FLUSH = 500
MAX_CLAIM = 500  # ids merged into one claim
RELEASE_GATHER = 0.002  # seconds a freed slot waits for others ended meanwhile (one Redis call)


@dataclass(frozen=True)
class Work:
    """What the lanes call back into ``webhooks.delivery`` (which sits above this module and
    hands its functions in): claim ids and start their sends (returns the ids sent), send one
    job, the result of a job not sent, record results in bulk, pull waiting deliveries of an
    endpoint, an endpoint's slot limit."""

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
    """A thread pool with a bound on the sends it holds (queued and in flight)."""

    def __init__(self, name, threads, capacity):
        self.name = name
        self.capacity = capacity
        self.used = 0
        self.cond = threading.Condition()
        self.waiting = set()  # endpoints whose deliveries found no room here
        self.pool = ThreadPoolExecutor(threads, thread_name_prefix=f"webhooks-{name}")

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


class Lanes:
    def __init__(self, work):
        self.work = work
        threads = conf.get("IDP_WEBHOOK_SENDER_THREADS")
        self.fast = Lane("sender", threads, max(threads, conf.get("IDP_WEBHOOK_SENDER_BACKLOG")))
        slow_threads = conf.get("IDP_WEBHOOK_SLOW_LANE_THREADS")
        # The slow lane queues nothing: a claimed delivery starts at once, well inside its lease.
        self.slow = Lane("slow-lane", slow_threads, slow_threads)
        self.results = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.granting = threading.Lock()  # held from a grant of slots to its sends in ``active``
        self.active = {}  # endpoint id -> sends of this process holding one of its slots
        self.parked = {}  # endpoint id -> deque of claimed jobs waiting for one of those slots
        self.started = {}  # delivery id -> (endpoint id, monotonic start) of healthy-lane sends
        self.demoted = {}  # endpoint id -> monotonic time until which this process sends it slow
        self.claims = queue.SimpleQueue()  # (ids, Future) from the Celery tasks
        self.freed = queue.SimpleQueue()  # (endpoint, slot) of ended sends
        self.writer = threading.Thread(target=self._write_forever, name="webhooks-writer", daemon=True)
        self.writer.start()
        self.claimer = threading.Thread(target=self._claim_forever, name="webhooks-claimer", daemon=True)
        self.releaser = threading.Thread(target=self._release_forever, name="webhooks-releaser", daemon=True)
        self.claimer.start()
        self.releaser.start()

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
            except Exception as exc:  # the tasks' rows stay pending; the sweeper dispatches them again
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
        """Start sends that hold a slot of their endpoint."""
        for job in jobs:
            with self.lock:
                self.active[job.endpoint.id] = self.active.get(job.endpoint.id, 0) + 1
            lane = self.slow if job.slow else self.fast
            lane.pool.submit(self._send, lane, job)

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

    def _send(self, lane, job):
        while job is not None:
            if lane is self.fast:
                self.started[job.delivery_id] = (job.endpoint.id, time.monotonic())
            try:
                result = self.work.send(job)
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
                self.slow.pool.submit(self._send, self.slow, following)
                following = None
            job = following
        lane.release()

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
        self.claims.put(_STOP)
        self.claimer.join(timeout=30)
        self.fast.pool.shutdown(wait=True)
        self.slow.pool.shutdown(wait=True)
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


def shutdown():
    global _lanes
    with _lock:
        current, _lanes = (_lanes, None) if _pid == os.getpid() else (None, None)
    if current is not None:
        current.shutdown()
