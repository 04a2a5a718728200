"""Per-endpoint concurrency slots and rate limits, shared by every worker through Redis.

A slot is a member of a sorted set scored by its expiry, so a worker killed while holding one
frees it when the lease runs out. Without Redis (dev mode) the same rules hold per process."""
import functools
import threading
import time
import uuid

from . import conf

_ACQUIRE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[4])
  redis.call('PEXPIRE', KEYS[1], ARGV[5])
  return 1
end
return 0
"""

# Release a slot and report (and clear) whether a delivery was given back while it was held.
_RELEASE = """
redis.call('ZREM', KEYS[1], ARGV[1])
return redis.call('DEL', KEYS[2])
"""

_RATE = """
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], 2000) end
return n
"""


@functools.cache
def _redis(url):
    import redis

    client = redis.Redis.from_url(url)
    return client, client.register_script(_ACQUIRE), client.register_script(_RATE), client.register_script(_RELEASE)


class _Local:
    def __init__(self):
        self.lock = threading.Lock()
        self.slots = {}
        self.rates = {}
        self.waiting = set()


_local = _Local()


def acquire(endpoint_id, limit, lease_seconds):
    """A slot token, or None when ``limit`` requests to this endpoint are already in flight."""
    token = uuid.uuid4().hex
    now = time.time()
    url = conf.get("IDP_WEBHOOK_REDIS_URL")
    if url:
        _, script, _, _ = _redis(url)
        ok = script(keys=[f"webhooks:slots:{endpoint_id}"],
                    args=[now, limit, now + lease_seconds, token, int(lease_seconds * 1000) + 1000])
        return token if ok else None
    with _local.lock:
        slots = {t: exp for t, exp in _local.slots.get(endpoint_id, {}).items() if exp > now}
        if len(slots) >= limit:
            _local.slots[endpoint_id] = slots
            return None
        slots[token] = now + lease_seconds
        _local.slots[endpoint_id] = slots
    return token


def mark_waiting(endpoint_id):
    """A delivery of this endpoint went back to its queue for want of a slot."""
    url = conf.get("IDP_WEBHOOK_REDIS_URL")
    if url:
        client, _, _, _ = _redis(url)
        client.set(f"webhooks:waiting:{endpoint_id}", 1, ex=3600)
        return
    with _local.lock:
        _local.waiting.add(endpoint_id)


def release(endpoint_id, token):
    """Free the slot; True when deliveries are waiting for one (the caller pulls the next)."""
    url = conf.get("IDP_WEBHOOK_REDIS_URL")
    if url:
        _, _, _, script = _redis(url)
        return bool(script(keys=[f"webhooks:slots:{endpoint_id}", f"webhooks:waiting:{endpoint_id}"], args=[token]))
    with _local.lock:
        _local.slots.get(endpoint_id, {}).pop(token, None)
        waiting = endpoint_id in _local.waiting
        _local.waiting.discard(endpoint_id)
        return waiting


def within_rate(endpoint_id, per_second):
    """Counts this attempt against the endpoint's per-second budget; False when over it."""
    if not per_second:
        return True
    second = int(time.time())
    url = conf.get("IDP_WEBHOOK_REDIS_URL")
    if url:
        _, _, script, _ = _redis(url)
        return script(keys=[f"webhooks:rate:{endpoint_id}:{second}"]) <= per_second
    with _local.lock:
        key = (endpoint_id, second)
        _local.rates = {k: v for k, v in _local.rates.items() if k[1] >= second - 1}
        _local.rates[key] = _local.rates.get(key, 0) + 1
        return _local.rates[key] <= per_second
