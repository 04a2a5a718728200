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


# A batch asks for slots of several endpoints at once. Per endpoint (KEYS: slots, waiting, rate;
# ARGV from 5: wanted, limit, per-second budget): grant what the free slots and this second's
# budget allow, flag the endpoint "waiting" when some were refused for want of a slot, and
# return {granted, refused by the rate} per endpoint.
_ACQUIRE_MANY = """
local out = {}
for i = 0, #KEYS / 3 - 1 do
  local slots, waiting, rate = KEYS[i * 3 + 1], KEYS[i * 3 + 2], KEYS[i * 3 + 3]
  local wanted, limit, per_s = tonumber(ARGV[5 + i * 3]), tonumber(ARGV[6 + i * 3]), tonumber(ARGV[7 + i * 3])
  redis.call('ZREMRANGEBYSCORE', slots, '-inf', ARGV[1])
  local grant = math.max(0, math.min(wanted, limit - redis.call('ZCARD', slots)))
  local limited = 0
  if grant > 0 and per_s > 0 then
    local room = math.max(0, per_s - tonumber(redis.call('GET', rate) or '0'))
    if room < grant then limited = grant - room; grant = room end
    if grant > 0 then
      redis.call('INCRBY', rate, grant)
      redis.call('PEXPIRE', rate, 2000)
    end
  end
  for j = 1, grant do redis.call('ZADD', slots, ARGV[2], ARGV[4] .. ':' .. i .. ':' .. j) end
  if grant > 0 then redis.call('PEXPIRE', slots, ARGV[3]) end
  if grant + limited < wanted then redis.call('SET', waiting, 1, 'EX', 3600) end
  out[#out + 1] = grant
  out[#out + 1] = limited
end
return out
"""

# Release many slots (KEYS: slots, waiting per slot; ARGV: the slot tokens); 1 per pair whose
# endpoint had deliveries waiting (the flag is cleared: one releaser pulls them).
_RELEASE_MANY = """
local out = {}
for i = 1, #ARGV do
  redis.call('ZREM', KEYS[i * 2 - 1], ARGV[i])
  out[i] = redis.call('DEL', KEYS[i * 2])
end
return out
"""


# After deliveries refused a slot are back in the database: flag the endpoint again (a release
# in between may have taken the flag and found nothing to pull) and say how many slots are free.
_REWAIT = """
local out = {}
for i = 1, #KEYS / 2 do
  redis.call('SET', KEYS[i * 2], 1, 'EX', 3600)
  redis.call('ZREMRANGEBYSCORE', KEYS[i * 2 - 1], '-inf', ARGV[1])
  out[i] = tonumber(ARGV[i + 1]) - redis.call('ZCARD', KEYS[i * 2 - 1])
end
return out
"""


@functools.cache
def _redis(url):
    import redis

    client = redis.Redis.from_url(url)
    return client, client.register_script(_ACQUIRE), client.register_script(_RATE), client.register_script(_RELEASE)


@functools.cache
def _redis_many(url):
    client = _redis(url)[0]
    return client.register_script(_ACQUIRE_MANY), client.register_script(_RELEASE_MANY), client.register_script(_REWAIT)


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


def acquire_many(wants, lease_seconds):
    """Slots for a batch: ``wants`` is [(endpoint_id, wanted, limit, per_second)]. Returns, in the
    same order, (slot tokens granted, number refused by the rate limit); the rest were refused
    for want of a free slot and the endpoint is marked waiting. One Redis call for the batch."""
    prefix = uuid.uuid4().hex
    now = time.time()
    url = conf.get("IDP_WEBHOOK_REDIS_URL")
    if url:
        second = int(now)
        keys, args = [], [now, now + lease_seconds, int(lease_seconds * 1000) + 1000, prefix]
        for endpoint_id, wanted, limit, per_second in wants:
            keys += [f"webhooks:slots:{endpoint_id}", f"webhooks:waiting:{endpoint_id}",
                     f"webhooks:rate:{endpoint_id}:{second}"]
            args += [wanted, limit, per_second]
        flat = _redis_many(url)[0](keys=keys, args=args) if wants else []
        return [([f"{prefix}:{i}:{j}" for j in range(1, flat[2 * i] + 1)], flat[2 * i + 1])
                for i in range(len(wants))]
    out = []
    for endpoint_id, wanted, limit, per_second in wants:
        tokens, limited = [], 0
        for _ in range(wanted):
            token = acquire(endpoint_id, limit, lease_seconds)
            if token is None:
                mark_waiting(endpoint_id)
                break
            if not within_rate(endpoint_id, per_second):
                with _local.lock:  # drop the slot without consuming the waiting flag
                    _local.slots.get(endpoint_id, {}).pop(token, None)
                limited = wanted - len(tokens)
                break
            tokens.append(token)
        out.append((tokens, limited))
    return out


def release_many(slots):
    """Free (endpoint_id, token) slots in one call; returns the endpoint ids (with repeats) whose
    waiting deliveries the caller should pull, one per freed slot that found the flag set."""
    if not slots:
        return []
    url = conf.get("IDP_WEBHOOK_REDIS_URL")
    if url:
        keys = []
        for endpoint_id, _ in slots:
            keys += [f"webhooks:slots:{endpoint_id}", f"webhooks:waiting:{endpoint_id}"]
        flags = _redis_many(url)[1](keys=keys, args=[token for _, token in slots])
        return [endpoint_id for (endpoint_id, _), flag in zip(slots, flags) if flag]
    return [endpoint_id for endpoint_id, token in slots if release(endpoint_id, token)]


def rewait(endpoints):
    """``endpoints``: [(endpoint_id, limit)] whose refused deliveries are back in the database.
    Flags each as waiting again; returns those with a slot free by now (pull them at once)."""
    url = conf.get("IDP_WEBHOOK_REDIS_URL")
    if not endpoints:
        return []
    if url:
        keys = []
        for endpoint_id, _ in endpoints:
            keys += [f"webhooks:slots:{endpoint_id}", f"webhooks:waiting:{endpoint_id}"]
        free = _redis_many(url)[2](keys=keys, args=[time.time()] + [limit for _, limit in endpoints])
        return [endpoint_id for (endpoint_id, _), n in zip(endpoints, free) if n > 0]
    now = time.time()
    with _local.lock:
        _local.waiting.update(endpoint_id for endpoint_id, _ in endpoints)
        return [endpoint_id for endpoint_id, limit in endpoints
                if sum(1 for exp in _local.slots.get(endpoint_id, {}).values() if exp > now) < limit]
