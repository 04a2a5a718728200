"""Per-process copies of values read from the database, kept true across processes.

Hot paths (the token endpoint, every realm event) must not query for configuration that rarely
changes. Each process keeps its own copy per key (a realm's parsed signing keys, its protocol
configuration, whether it has webhook endpoints). A change bumps that key's generation in the
``generations`` Django cache, which every process of a deployment shares (Redis in production;
the database with the feature ``stateless``, so that every site sees it; a directory of files in
the var directory in dev mode, so that ``manage.py`` commands reach the running server too):
the changing process drops its copy at once, and every other process compares its copy's
generation with the shared one at most once per ``CHECK_SECONDS``, so a change is seen
everywhere within about a second for one cache read per key and second, not per request.

A cache keyed by realm is bounded (``max_entries``): a process serving a thousand realms keeps
the ones it served last, so its memory does not grow with the number of realms (decision 0107)."""
import threading
import time
from collections import OrderedDict

from django.core.cache import caches
from django.db import transaction

CHECK_SECONDS = 1.0
GENERATIONS = "generations"  # the cache alias shared by every process (see the settings)


def _shared():
    return caches[GENERATIONS]


def count(namespace, hit):
    """Told of every lookup, a copy used or not (idp.metrics counts them: set in IdpConfig.ready)."""


class LocalCopies:
    """``get(key)`` returns this process's copy of ``load(key)``, reloaded when the key's shared
    generation has moved; ``invalidate(key)`` is called on every change of what ``load`` reads.
    ``max_entries()``, when given, is the most copies kept: past it the least recently used one
    is dropped (read on each load, so that a setting changed in tests applies). ``dropped(value)``,
    when given, is called with each copy this process lets go (past the cap, changed, reloaded or
    cleared), outside the lock: a copy whose parts refer to one another breaks the cycle there, so
    that it is freed at once and not by the next full collection (decision 0107)."""

    def __init__(self, namespace, load, check_seconds=CHECK_SECONDS, max_entries=None, dropped=None):
        self.namespace = namespace
        self.check_seconds = check_seconds
        self._load = load
        self._max_entries = max_entries
        self._dropped = dropped
        self._entries = OrderedDict()  # key -> [value, generation, monotonic time of the last check], oldest use first
        self._lock = threading.Lock()

    def generation_key(self, key):
        return f"idp:gen:{self.namespace}:{key}"

    def get(self, key):
        entry = self._entries.get(key)
        now = time.monotonic()
        if entry is not None:
            if now - entry[2] < self.check_seconds:
                return self._hit(key, entry)
            if _shared().get(self.generation_key(key), 0) == entry[1]:
                entry[2] = now
                return self._hit(key, entry)
        count(self.namespace, False)
        # The generation is read before the rows: a change committed meanwhile moves it again,
        # so the next check reloads.
        generation = _shared().get(self.generation_key(key), 0)
        value = self._load(key)
        with self._lock:
            gone = [self._entries.get(key)]
            self._entries[key] = [value, generation, now]
            if self._max_entries is not None:
                self._entries.move_to_end(key)
                cap = self._max_entries()
                while len(self._entries) > cap:
                    gone.append(self._entries.popitem(last=False)[1])
        self._let_go(gone)
        return value

    def _let_go(self, entries):
        if self._dropped is not None:
            for entry in entries:
                if entry is not None:
                    self._dropped(entry[0])

    def _hit(self, key, entry):
        if self._max_entries is not None:
            try:
                self._entries.move_to_end(key)
            except KeyError:  # dropped meanwhile by another thread's change
                pass
        count(self.namespace, True)
        return entry[0]

    def invalidate(self, key):
        """Drop the copy here and everywhere: now, and again after the commit, so that no process
        keeps rows it read before the change under the new generation."""
        self._bump(key)
        transaction.on_commit(lambda: self._bump(key))

    def clear(self):
        """Forget this process's copies (tests that re-create objects under the same ids)."""
        with self._lock:
            gone = list(self._entries.values())
            self._entries.clear()
        self._let_go(gone)

    def _bump(self, key):
        self._let_go([self._entries.pop(key, None)])
        shared, name = _shared(), self.generation_key(key)
        try:
            shared.incr(name)
        except ValueError:  # no generation yet (or evicted): start one
            shared.add(name, 1, timeout=None) or shared.incr(name)
