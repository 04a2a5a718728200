"""The HTTP path's writes, sent at the end of the event loop's tick.

A write to a loopback socket whose reader sleeps wakes the reader up, and the writer pays for it
(on a virtual machine, an interrupt to the other CPU). Written at once, each request and each
answer wakes its peer: the peer wakes, reads, sleeps again while the proxy works on the next
call, and the next write wakes it again. Held until every callback of the tick has run and then
written together, the writes of several calls share one wake-up (decision 0106).

Every write, close and abort of a connection goes through its CorkedTransport, so each
connection's bytes and its close go out in the order the proxy made them.
"""
from __future__ import annotations

import weakref

_CLOSE = None  # a close queued behind the connection's writes


class Cork:
    """The writes one event loop made during its current tick."""

    __slots__ = ("loop", "pending", "__weakref__")

    def __init__(self, loop):
        self.loop = loop
        self.pending: list = []  # (CorkedTransport, bytes or _CLOSE); the same list for good

    def flush(self) -> None:
        pending = self.pending
        try:
            for corked, data in pending:  # nothing here writes through a CorkedTransport
                transport = corked.transport
                if transport.is_closing():
                    continue  # aborted, or the peer went away: its connection_lost tells the proxy
                if data is _CLOSE:
                    transport.close()
                else:
                    transport.write(data)
        finally:
            pending.clear()  # an empty list is what schedules the next flush


_CORKS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def cork_for(loop) -> Cork:
    cork = _CORKS.get(loop)
    if cork is None:
        cork = _CORKS[loop] = Cork(loop)
    return cork


class CorkedTransport:
    """A transport whose writes (and a close that follows them) wait for the end of the tick."""

    __slots__ = ("transport", "cork", "pending", "closing")

    def __init__(self, transport, cork: Cork):
        self.transport = transport
        self.cork = cork
        self.pending = cork.pending
        self.closing = False

    def write(self, data: bytes) -> None:
        pending = self.pending
        if not pending:
            self.cork.loop.call_soon(self.cork.flush)
        pending.append((self, data))

    def close(self) -> None:
        if not self.closing:
            self.closing = True
            if self.pending:
                self.write(_CLOSE)  # after the writes already queued
            else:
                self.transport.close()

    def abort(self) -> None:
        """Cut now; what was written before goes to the socket first, as an unbuffered write would."""
        self.closing = True
        transport = self.transport
        for corked, data in self.pending:
            if corked is self and data is not _CLOSE and not transport.is_closing():
                transport.write(data)
        transport.abort()

    def is_closing(self) -> bool:
        return self.closing or self.transport.is_closing()

    def pause_reading(self) -> None:
        self.transport.pause_reading()

    def resume_reading(self) -> None:
        self.transport.resume_reading()

    def get_extra_info(self, name: str, default=None):
        return self.transport.get_extra_info(name, default)
