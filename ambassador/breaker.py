"""Circuit breaker per upstream: CLOSED -> OPEN -> HALF_OPEN -> CLOSED.

CLOSED counts the outcome of every try in a sliding window of the last ``window`` tries; when at
least ``min_calls`` are known and the share of failures (timeouts, resets, refused connections,
502/503/504) reaches ``trip_ratio`` it opens. OPEN refuses at once. After ``open_for`` the next call
moves it to HALF_OPEN, where up to ``half_open_probes`` tries go through: as many successes close
it, any failure reopens it.
"""
from __future__ import annotations

import time

CLOSED, OPEN, HALF_OPEN = 0, 1, 2
STATE_NAMES = {CLOSED: "closed", OPEN: "open", HALF_OPEN: "half_open"}


class Breaker:
    __slots__ = ("cfg", "state", "window", "ring", "pos", "count", "failures", "opened_until", "probes", "probe_ok",
                 "clock", "on_change")

    def __init__(self, cfg, clock=time.monotonic, on_change=None):
        self.cfg = cfg
        self.clock = clock
        self.state = CLOSED
        self.window = cfg.window
        self._clear()
        self.opened_until = 0.0
        self.probes = 0
        self.probe_ok = 0
        self.on_change = on_change

    def _set(self, state: int) -> None:
        self.state = state
        if self.on_change is not None:
            self.on_change(state)

    def allow(self) -> bool:
        """May a try start now? A True in HALF_OPEN reserves a probe slot."""
        state = self.state
        if state == CLOSED:
            return True
        if state == OPEN:
            if self.clock() < self.opened_until:
                return False
            self._set(HALF_OPEN)
            self.probes = 0
            self.probe_ok = 0
        if self.probes < self.cfg.half_open_probes:
            self.probes += 1
            return True
        return False

    def record(self, ok: bool) -> None:
        state = self.state
        if state == HALF_OPEN:
            if not ok:
                self._trip()
                return
            self.probe_ok += 1
            if self.probe_ok >= self.cfg.half_open_probes:
                self._clear()
                self._set(CLOSED)
            return
        if state == OPEN:
            return  # a late answer from before the trip says nothing new
        # The window is a ring of the last ``window`` outcomes (1 = failure). While it holds no
        # failure every slot is 0, so a success only has to be counted.
        if self.count < self.window:
            self.count += 1
        if ok and not self.failures:
            return
        ring = self.ring
        pos = self.pos
        self.failures -= ring[pos]  # the oldest outcome leaves (0 while the window is filling)
        if ok:
            ring[pos] = 0
        else:
            ring[pos] = 1
            self.failures += 1
        self.pos = pos + 1 if pos + 1 < self.window else 0
        if not ok and self.count >= self.cfg.min_calls and self.failures >= self.cfg.trip_ratio * self.count:
            self._trip()

    def _clear(self) -> None:
        self.ring = bytearray(self.window)
        self.pos = 0
        self.count = 0
        self.failures = 0

    def release_probe(self) -> None:
        """A probe that ended without an upstream verdict (e.g. the client went away) frees its slot."""
        if self.state == HALF_OPEN and self.probes > 0:
            self.probes -= 1

    def _trip(self) -> None:
        self.opened_until = self.clock() + self.cfg.open_for
        self._clear()
        self._set(OPEN)
