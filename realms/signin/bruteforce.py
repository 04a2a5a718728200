"""Brute-force detection per user, with Keycloak's semantics (realm settings of the same names).

Each failed sign-in of a user is counted. When two failures come closer together than
``quick_login_check_milli_seconds``, the account waits ``minimum_quick_login_wait_seconds``.
Every ``failure_factor`` failures the wait grows by ``wait_increment_seconds``
(``wait_increment * failures // failure_factor``), capped at ``max_failure_wait_seconds``.
A failure more than ``max_delta_time_seconds`` after the previous one starts the count afresh.
With ``permanent_lockout`` the account is disabled instead: at ``failure_factor`` failures when
``max_temporary_lockouts`` is 0, else after that many temporary lockouts.

Failure records live in the shared cache (Redis in production), like Keycloak's in-memory
login-failure store; the failure counter is an atomic increment so that parallel guesses are all
counted. A successful sign-in clears the record.
"""
import time

from django.core.cache import cache

from ..models import User

# Keycloak's name for the user attribute noting why an account was disabled.
DISABLED_REASON_ATTRIBUTE = "disabledReason"
PERMANENT_LOCKOUT = "permanentLockout"


def _key(realm, user, part):
    return _key_of(realm.pk, user.pk, part)


def _key_of(realm_pk, user_pk, part):
    return f"idp:loginfailure:{realm_pk}:{user_pk}:{part}"


def _ttl(realm):
    return max(realm.max_delta_time_seconds, realm.max_failure_wait_seconds, 60) + 60


def _now_ms():
    return int(time.time() * 1000)


def status(realm, user) -> dict:
    """The failure record: failures, last_failure (ms), not_before (ms), temporary_lockouts."""
    record = cache.get(_key(realm, user, "record")) or {}
    return {
        "failures": cache.get(_key(realm, user, "count")) or 0,
        "last_failure": record.get("last_failure", 0),
        "last_ip": record.get("last_ip", ""),
        "not_before": record.get("not_before", 0),
        "temporary_lockouts": record.get("temporary_lockouts", 0),
    }


def is_locked(realm, user) -> bool:
    """True while a temporary lockout runs. A permanent lockout disables the user instead, so
    callers that check ``user.enabled`` (every sign-in and grant does) see it there."""
    if not realm.brute_force_protected:
        return False
    return status(realm, user)["not_before"] > _now_ms()


def record_failure(realm, user, ip_address=""):
    if not realm.brute_force_protected:
        return
    now = _now_ms()
    ttl = _ttl(realm)
    record = cache.get(_key(realm, user, "record")) or {}
    last = record.get("last_failure", 0)
    delta = now - last if last else 0
    count_key = _key(realm, user, "count")
    if last and delta > realm.max_delta_time_seconds * 1000:
        cache.delete(count_key)
        record = {}
    cache.add(count_key, 0, ttl)
    try:
        failures = cache.incr(count_key)
    except ValueError:  # evicted between add and incr
        cache.set(count_key, 1, ttl)
        failures = 1
    record["last_failure"] = now
    record["last_ip"] = ip_address or ""
    factor = max(realm.failure_factor, 1)

    if realm.permanent_lockout and realm.max_temporary_lockouts == 0:
        cache.set(_key(realm, user, "record"), record, ttl)
        if failures >= factor:
            _disable(user)
        return

    wait = 0
    if 0 < delta < realm.quick_login_check_milli_seconds:
        wait = realm.minimum_quick_login_wait_seconds
    if failures >= factor:
        wait = max(wait, realm.wait_increment_seconds * (failures // factor))
    wait = min(wait, realm.max_failure_wait_seconds)
    if wait > 0 and failures % factor == 0:
        record["temporary_lockouts"] = record.get("temporary_lockouts", 0) + 1
        if realm.permanent_lockout and record["temporary_lockouts"] > realm.max_temporary_lockouts:
            cache.set(_key(realm, user, "record"), record, ttl)
            _disable(user)
            return
    if wait > 0:
        record["not_before"] = max(record.get("not_before", 0), now + wait * 1000)
    cache.set(_key(realm, user, "record"), record, ttl)


def record_success(realm, user):
    """A successful sign-in forgets earlier failures (Keycloak clears the record too)."""
    if realm.brute_force_protected:
        clear(realm, user)


def clear(realm, user):
    cache.delete_many([_key(realm, user, "count"), _key(realm, user, "record")])


def clear_all(realm, batch=1000):
    """Forget the failures of every user of the realm (records are keyed per user, so by user)."""
    pks = User.objects.filter(realm=realm).values_list("pk", flat=True).iterator(chunk_size=batch)
    keys = []
    for pk in pks:
        keys += [_key_of(realm.pk, pk, "count"), _key_of(realm.pk, pk, "record")]
        if len(keys) >= 2 * batch:
            cache.delete_many(keys)
            keys = []
    if keys:
        cache.delete_many(keys)


def _disable(user):
    user.enabled = False
    user.attributes = {**(user.attributes or {}), DISABLED_REASON_ATTRIBUTE: PERMANENT_LOCKOUT}
    user.save(update_fields=["enabled", "attributes"])
