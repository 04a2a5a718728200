"""Webhook settings with their defaults, read at call time so that tests can override them.

Every value can be set in Django settings under the same name; the mode files (dev, prod) only
set what differs from these defaults."""
import functools

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

# Delay before attempt 2, 3, ... (attempt 1 is immediate): 10 attempts over a little over 3 days.
DEFAULT_RETRY_SCHEDULE = [5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400]


# Settings no longer read, with what took their place: set, they would do nothing, so the app
# refuses to start (checked in WebhooksConfig.ready).
RETIRED = {
    "IDP_WEBHOOK_SENDER_THREADS": "IDP_WEBHOOK_SENDER_SENDS",
    "IDP_WEBHOOK_SENDER_BACKLOG": "IDP_WEBHOOK_SENDER_SENDS",
    "IDP_WEBHOOK_SLOW_LANE_THREADS": "IDP_WEBHOOK_SLOW_LANE_SENDS",
}


def check_retired():
    set_ = [f"{name} is no longer read: the sends run on an event loop, set {instead} (docs/webhooks.md)"
            for name, instead in RETIRED.items() if hasattr(settings, name)]
    if set_:
        raise ImproperlyConfigured("; ".join(set_))


def get(name):
    return getattr(settings, name, _DEFAULTS[name]() if callable(_DEFAULTS[name]) else _DEFAULTS[name])


def _dev():
    return getattr(settings, "IDP_DEV_MODE", False)


def _redis_url():
    broker = getattr(settings, "CELERY_BROKER_URL", "") or ""
    return broker if broker.startswith(("redis://", "rediss://")) else ""


_DEFAULTS = {
    "IDP_WEBHOOK_TIMEOUT": 15.0,  # seconds to wait for the receiver's answer (spec: 15-30 s)
    "IDP_WEBHOOK_CONNECT_TIMEOUT": 3.0,  # seconds to open a connection; a dead host is given up early
    "IDP_WEBHOOK_RETRY_SCHEDULE": DEFAULT_RETRY_SCHEDULE,
    "IDP_WEBHOOK_RETRY_JITTER": 0.2,  # each delay is stretched or shrunk by up to 20 %
    "IDP_WEBHOOK_MAX_RETRY_AFTER": 86400,  # a Retry-After longer than a day is capped
    "IDP_WEBHOOK_THROTTLE_SECONDS": 30,  # first slow-down after 429/502/504; doubles up to 1 h
    "IDP_WEBHOOK_DISABLE_AFTER": 5 * 86400,  # consecutive failure this long disables an endpoint
    "IDP_WEBHOOK_PAYLOAD_LIMIT": 20480,  # bytes of a fat body; a larger snapshot is sent thin (spec: < 20 KB)
    "IDP_WEBHOOK_RESPONSE_BODY_LIMIT": 1024,  # bytes of a response body kept in the log
    "IDP_WEBHOOK_RETENTION_DAYS": 30,  # delivery log, delivered messages, receiver records
    "IDP_WEBHOOK_SWEEP_INTERVAL": 5.0,  # seconds between outbox sweeps (retries, lost tasks)
    "IDP_WEBHOOK_REDISPATCH_AFTER": 60.0,  # a dispatched but unclaimed delivery is sent again
    "IDP_WEBHOOK_LEASE_MARGIN": 30.0,  # a claimed delivery is taken back after timeout + this
    "IDP_WEBHOOK_DEFAULT_CONCURRENCY": 10,
    # Per worker process: sends in flight at once for healthy endpoints (one event loop sends them).
    "IDP_WEBHOOK_SENDER_SENDS": 256,
    # Per worker process: sends in flight to endpoints demoted after unanswered requests (the slow lane).
    "IDP_WEBHOOK_SLOW_LANE_SENDS": 16,
    "IDP_WEBHOOK_SLOW_LANE_SECONDS": 300,  # an endpoint stays demoted this long unless it answers
    "IDP_WEBHOOK_SLOW_LANE_CONCURRENCY": 2,  # requests in flight to a demoted endpoint, at most
    "IDP_WEBHOOK_SLOW_AFTER": 2.0,  # seconds without an answer that demote an endpoint at once
    "IDP_WEBHOOK_WRITE_INTERVAL": 0.01,  # seconds results wait to be written together
    "IDP_WEBHOOK_ORIGIN": "",  # WebHook-Request-Origin of the handshake; "" = host of IDP_BASE_URL
    "IDP_WEBHOOK_REDIS_URL": _redis_url,  # concurrency and rate limits; "" = in-process limits
    "IDP_WEBHOOK_INPROCESS": _dev,  # dev mode: deliveries run in a thread of the web process
    "IDP_WEBHOOK_RECEIVER_MAX_ATTEMPTS": 5,  # then the received event is dead-lettered
    "IDP_WEBHOOK_RECEIVER_RETRY_BASE": 10.0,  # seconds; doubles after every handler failure
    "IDP_WEBHOOK_RECEIVER_QUEUE_AGE_ALERT": 300,  # seconds: an older queued received event is an alert
}


@functools.cache
def redis_client(url):
    """One client (and connection pool) per Redis URL for the process: the senders' limits and the
    deliveries' hand-off share it. Each command waits no longer than the broker's do (decision
    0108, ``IDP_REDIS_SOCKET_TIMEOUT``)."""
    import redis

    return redis.Redis.from_url(url, **getattr(settings, "CELERY_BROKER_TRANSPORT_OPTIONS", {}))
