"""Admission control (Keycloak has none): per realm, how many requests a minute one address, or
one authenticated client, may make to the token endpoint, the sign-in, registration and
reset-credentials pages and the Admin API. Counted in the shared cache, so every node sees the
same counts; a limit reached is answered 429 with ``Retry-After`` by each surface in its own
shape (decision 0091).

The limits are realm attributes, ``rateLimit.<surface>.perAddress`` and
``rateLimit.<surface>.perClient`` (requests per minute; absent means no limit). The pages count
per address only: their client is not authenticated yet, and a per-client budget there would let
anyone lock a client's users out. The proxies of ``IDP_TRUSTED_PROXIES`` are never limited by
address (their own health checks; the clients behind them are counted by their forwarded
address)."""
import hashlib
import math
import time

from django.core.cache import cache

from ..errors import RealmsError
from .web import _is_trusted, client_address, trusted_proxies

TOKEN, LOGIN, REGISTRATION, RESET, ADMIN = "token", "login", "registration", "resetCredentials", "admin"
SURFACES = (TOKEN, LOGIN, REGISTRATION, RESET, ADMIN)
PER_ADDRESS, PER_CLIENT = "perAddress", "perClient"
PREFIX = "rateLimit."
WINDOW = 60  # seconds: the limits are per minute
ERROR = "too_many_requests"  # the error of the event a refusal records


class RateLimited(RealmsError):
    def __init__(self, retry_after):
        super().__init__("Too many requests")
        self.retry_after = retry_after


def attribute(surface, kind):
    return f"{PREFIX}{surface}.{kind}"


KNOWN = frozenset({attribute(s, PER_ADDRESS) for s in SURFACES} | {attribute(s, PER_CLIENT) for s in (TOKEN, ADMIN)})


def check_attributes(attributes):
    """The refusal of a realm's rateLimit attributes, or None: an unknown one or a value that is
    not a positive whole number would otherwise limit nothing."""
    for name, value in (attributes or {}).items():
        if not name.startswith(PREFIX):
            continue
        if name not in KNOWN:
            return f"Unknown rate limit {name}; one of: {', '.join(sorted(KNOWN))}"
        if not str(value).isdigit() or int(value) < 1:
            return f"{name} must be a positive number of requests per minute, not {value!r}"
    return None


def _limit(realm, surface, kind):
    value = (realm.attributes or {}).get(attribute(surface, kind))
    return int(value) if value else 0


def _count(key):
    """This window's count after this request: one round trip once the window's key exists."""
    try:
        return cache.incr(key)
    except ValueError:  # the first request of the window
        if cache.add(key, 1, timeout=WINDOW * 2):
            return 1
        return cache.incr(key)


def admit(request, realm, surface, *, client_id=None):
    """Count this request against the realm's limits for ``surface``: by its address, or, when
    ``client_id`` is given (a client that has just authenticated), by that client. Raises
    RateLimited when over."""
    limit = _limit(realm, surface, PER_CLIENT if client_id is not None else PER_ADDRESS)
    if not limit:  # most realms: nothing to work out on the token path
        return
    if client_id is not None:
        kind, who = PER_CLIENT, client_id
    else:
        peer, networks = request.META.get("REMOTE_ADDR", ""), trusted_proxies()
        kind, who = PER_ADDRESS, client_address(request)
        if networks and who == peer and _is_trusted(peer, networks):
            return  # the proxy's own request
    now = time.time()
    window = int(now // WINDOW)
    digest = hashlib.sha256(who.encode()).hexdigest()[:32]  # addresses and ids of any length
    if _count(f"admission:{realm.pk}:{surface}:{kind}:{digest}:{window}") > limit:
        raise RateLimited(max(1, math.ceil((window + 1) * WINDOW - now)))
