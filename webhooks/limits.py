"""Per-endpoint concurrency slots and rate limits, shared by every worker through Redis.

A slot is a member of a sorted set scored by its expiry, so a worker killed while holding one
frees it when the lease runs out. Without Redis (dev mode) the same rules hold per process."""
import functools
import threading
import time
import uuid

from . import conf

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
def _scripts(url):
    client = conf.redis_client(url)
    return (client.register_script(_ACQUIRE_MANY), client.register_script(_RELEASE_MANY),
            client.register_script(_REWAIT))


class _Local:
    """The same rules in this process (dev mode, no Redis)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.slots = {}
        self.rates = {}
        self.waiting = set()

    def acquire(self, endpoint_id, limit, lease_seconds, per_second):
        """A slot token; None without a free slot (the endpoint is flagged waiting); "" over the
        rate. Called with the lock held."""
        now = time.time()
        slots = {t: exp for t, exp in self.slots.get(endpoint_id, {}).items() if exp > now}
        self.slots[endpoint_id] = slots
        if len(slots) >= limit:
            self.waiting.add(endpoint_id)
            return None
        if per_second:
            second = int(now)
            self.rates = {k: v for k, v in self.rates.items() if k[1] >= second - 1}
            if self.rates.get((endpoint_id, second), 0) >= per_second:
                return ""
            self.rates[(endpoint_id, second)] = self.rates.get((endpoint_id, second), 0) + 1
        token = uuid.uuid4().hex
        slots[token] = now + lease_seconds
        return token

    def release(self, endpoint_id, token):
        """Free the slot; True (and the flag cleared) when the endpoint was flagged waiting."""
        self.slots.get(endpoint_id, {}).pop(token, None)
        waiting = endpoint_id in self.waiting
        self.waiting.discard(endpoint_id)
        return waiting


_local = _Local()


def acquire(endpoint_id, limit, lease_seconds):
    """One slot (tools and tests): a token, or None when ``limit`` requests are in flight."""
    tokens, _ = acquire_many([(endpoint_id, 1, limit, 0)], lease_seconds)[0]
    return tokens[0] if tokens else None


def release(endpoint_id, token):
    """Free one slot; True when deliveries are waiting for one (the caller pulls them)."""
    return bool(release_many([(endpoint_id, token)]))


def acquire_many(wants, lease_seconds):
    """Slots for a batch: ``wants`` is [(endpoint_id, wanted, limit, per_second)]. Returns, in the
    same order, (slot tokens granted, number refused by the rate limit); the rest were refused
    for want of a free slot and the endpoint is marked waiting. One Redis call for the batch."""
    url = conf.get("IDP_WEBHOOK_REDIS_URL")
    if url:
        prefix = uuid.uuid4().hex
        now = time.time()
        keys, args = [], [now, now + lease_seconds, int(lease_seconds * 1000) + 1000, prefix]
        for endpoint_id, wanted, limit, per_second in wants:
            keys += [f"webhooks:slots:{endpoint_id}", f"webhooks:waiting:{endpoint_id}",
                     f"webhooks:rate:{endpoint_id}:{int(now)}"]
            args += [wanted, limit, per_second]
        flat = _scripts(url)[0](keys=keys, args=args) if wants else []
        return [([f"{prefix}:{i}:{j}" for j in range(1, flat[2 * i] + 1)], flat[2 * i + 1])
                for i in range(len(wants))]
    out = []
    with _local.lock:
        for endpoint_id, wanted, limit, per_second in wants:
            tokens, limited = [], 0
            for _ in range(wanted):
                token = _local.acquire(endpoint_id, limit, lease_seconds, per_second)
                if not token:
                    limited = wanted - len(tokens) if token == "" else 0
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
        flags = _scripts(url)[1](keys=keys, args=[token for _, token in slots])
        return [endpoint_id for (endpoint_id, _), flag in zip(slots, flags) if flag]
    with _local.lock:
        return [endpoint_id for endpoint_id, token in slots if _local.release(endpoint_id, token)]


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
        free = _scripts(url)[2](keys=keys, args=[time.time()] + [limit for _, limit in endpoints])
        return [endpoint_id for (endpoint_id, _), n in zip(endpoints, free) if n > 0]
    now = time.time()
    with _local.lock:
        _local.waiting.update(endpoint_id for endpoint_id, _ in endpoints)
        return [endpoint_id for endpoint_id, limit in endpoints
                if sum(1 for exp in _local.slots.get(endpoint_id, {}).values() if exp > now) < limit]
