"""Retry decisions: eligibility, jittered exponential backoff and the retry budget."""
from __future__ import annotations

import random
import time

from .config import IDEMPOTENT_METHODS


def max_retries(route_retry, method: str, headers_lc: dict) -> int:
    """How many retries this request may have, from the route and the client's hints."""
    hint = headers_lc.get(b"x-ambassador-retry")
    if hint is not None and hint.strip().lower() == b"off":
        return 0
    n = route_retry.max
    if n == 0:
        return 0
    if not (route_retry.safe or method in IDEMPOTENT_METHODS or b"idempotency-key" in headers_lc):
        return 0
    cap = headers_lc.get(b"x-ambassador-max-retries")
    if cap is not None:
        try:
            n = min(n, max(0, int(cap)))
        except ValueError:
            pass  # a malformed hint is ignored rather than failing the call
    return n


def backoff(route_retry, retry_number: int, rand=random.random) -> float:
    """'Full jitter': uniform in [0, min(max, base * 2**n)) so synchronised clients spread out."""
    ceiling = min(route_retry.backoff_max, route_retry.backoff_base * (2 ** retry_number))
    return ceiling * rand()


class RetryBudget:
    """Retries may be at most ``ratio`` of the requests in flight, with a floor of
    ``min_per_second`` retries each second so that a quiet proxy can still retry.
    """

    __slots__ = ("ratio", "per_second", "in_flight", "retries_in_flight", "tokens", "stamp", "clock")

    def __init__(self, cfg, clock=time.monotonic):
        self.ratio = cfg.ratio
        self.per_second = cfg.min_per_second
        self.in_flight = 0
        self.retries_in_flight = 0
        self.tokens = cfg.min_per_second
        self.clock = clock
        self.stamp = clock()

    def try_acquire(self) -> bool:
        if self.retries_in_flight + 1 <= self.ratio * self.in_flight:
            self.retries_in_flight += 1
            return True
        now = self.clock()
        self.tokens = min(self.per_second, self.tokens + (now - self.stamp) * self.per_second)
        self.stamp = now
        if self.tokens >= 1:
            self.tokens -= 1
            self.retries_in_flight += 1
            return True
        return False

    def release(self) -> None:
        self.retries_in_flight -= 1
