"""Instances of an upstream, load balancing and outlier ejection."""
from __future__ import annotations

import json
import random
import time


class Instance:
    __slots__ = ("host", "port", "key", "key_json", "authority", "authority_b", "request_host", "active", "failures",
                 "ejected_until", "ejections", "idle", "h2", "h2_connecting", "removed")

    def __init__(self, host: str, port: int):
        self.host = host
        self.port = port
        self.key = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        self.key_json = json.dumps(self.key)  # for the access log
        self.set_authority(self.key)
        self.active = 0  # requests in flight, for least_request
        self.failures = 0  # consecutive failures, for outlier ejection
        self.ejected_until = 0.0
        self.ejections = 0
        self.idle: list = []  # idle HTTP/1.1 connections (LIFO keeps warm ones warm)
        self.h2: list = []  # HTTP/2 connections (normally one), shared by concurrent calls
        self.h2_connecting = None  # a future while an HTTP/2 connection is being opened
        self.removed = False

    def set_authority(self, authority: str) -> None:
        """The ``Host`` sent to this instance (``:authority`` over HTTP/2)."""
        self.authority = authority
        self.authority_b = authority.encode()
        self.request_host = b" HTTP/1.1\r\nHost: " + self.authority_b + b"\r\n"  # follows the request target

    def __repr__(self) -> str:
        return f"Instance({self.key})"


class Balancer:
    """round_robin or least_request (power of two choices) over the instances not ejected.

    An instance with ``consecutive_failures`` failed tries in a row is ejected for
    ``eject_for * number of ejections`` (capped at 5 minutes), but never more than
    ``max_ejected_ratio`` of the instances at once; if every candidate is ejected the least recently
    failed one is still used rather than failing outright.
    """

    def __init__(self, kind: str, outlier, clock=time.monotonic, on_eject=None):
        self.least = kind == "least_request"
        self.outlier = outlier
        self.clock = clock
        self.instances: list[Instance] = []
        self.rr = 0
        self.on_eject = on_eject

    def set_instances(self, instances: list[Instance]) -> None:
        self.instances = instances

    def pick(self, tried=()) -> Instance | None:
        insts = self.instances
        n = len(insts)
        if n == 0:
            return None
        if n == 1:
            return insts[0]
        now = self.clock()
        cands = [i for i in insts if i.ejected_until <= now and i not in tried]
        if not cands:
            # Every healthy instance was tried already: an ejected one not yet tried beats a repeat.
            cands = [i for i in insts if i not in tried] or [i for i in insts if i.ejected_until <= now] or insts
        if len(cands) == 1:
            return cands[0]
        if self.least:
            a, b = random.sample(cands, 2)
            return a if a.active <= b.active else b
        self.rr += 1
        return cands[self.rr % len(cands)]

    def success(self, inst: Instance) -> None:
        inst.failures = 0

    def failure(self, inst: Instance) -> None:
        inst.failures += 1
        if inst.failures < self.outlier.consecutive_failures:
            return
        now = self.clock()
        if inst.ejected_until > now:
            return
        ejected = sum(1 for i in self.instances if i.ejected_until > now)
        if ejected + 1 > self.outlier.max_ejected_ratio * len(self.instances):
            return
        inst.ejections += 1
        inst.ejected_until = now + min(300.0, self.outlier.eject_for * inst.ejections)
        inst.failures = 0
        if self.on_eject is not None:
            self.on_eject(inst)
