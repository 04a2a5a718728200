"""Brute-force detection with Keycloak's semantics: quick-login wait, growing wait per failure
factor, cap, reset after max delta, permanent lockout, and clearing on success."""
import time

import time_machine

from realms.signin import bruteforce


def _at(seconds):
    return time_machine.travel(seconds, tick=False)


def _configure(realm, **fields):
    defaults = dict(brute_force_protected=True, failure_factor=3, wait_increment_seconds=60,
                    max_failure_wait_seconds=150, minimum_quick_login_wait_seconds=30,
                    quick_login_check_milli_seconds=1000, max_delta_time_seconds=600)
    for name, value in {**defaults, **fields}.items():
        setattr(realm, name, value)
    realm.save()


def test_off_by_default_counts_nothing(realm, user):
    for _ in range(50):
        bruteforce.record_failure(realm, user)
    assert not bruteforce.is_locked(realm, user)
    assert bruteforce.status(realm, user)["failures"] == 0


def test_wait_grows_with_every_failure_factor_and_is_capped(realm, user):
    _configure(realm)
    t0 = time.time()
    # Failures 10 s apart: no quick-login wait.
    for i in range(2):
        with _at(t0 + 10 * i):
            bruteforce.record_failure(realm, user)
            assert not bruteforce.is_locked(realm, user)
    with _at(t0 + 20):
        bruteforce.record_failure(realm, user)  # 3rd = failure factor: 60 s
        assert bruteforce.is_locked(realm, user)
    with _at(t0 + 20 + 59):
        assert bruteforce.is_locked(realm, user)
    with _at(t0 + 20 + 61):
        assert not bruteforce.is_locked(realm, user)
    for i in range(3):  # failures 4..6: the 6th gives 2 x 60 s
        with _at(t0 + 100 + 10 * i):
            bruteforce.record_failure(realm, user)
    with _at(t0 + 120 + 119):
        assert bruteforce.is_locked(realm, user)
    with _at(t0 + 120 + 121):
        assert not bruteforce.is_locked(realm, user)
    for i in range(3):  # failures 7..9: 3 x 60 s = 180 s, capped at 150 s
        with _at(t0 + 300 + 10 * i):
            bruteforce.record_failure(realm, user)
    with _at(t0 + 320 + 149):
        assert bruteforce.is_locked(realm, user)
    with _at(t0 + 320 + 151):
        assert not bruteforce.is_locked(realm, user)
    assert bruteforce.status(realm, user)["failures"] == 9


def test_quick_successive_failures_wait_the_minimum(realm, user):
    _configure(realm, failure_factor=30)
    t0 = time.time()
    with _at(t0):
        bruteforce.record_failure(realm, user)
    with _at(t0 + 0.5):
        bruteforce.record_failure(realm, user)
        assert bruteforce.is_locked(realm, user)
    with _at(t0 + 0.5 + 29):
        assert bruteforce.is_locked(realm, user)
    with _at(t0 + 0.5 + 31):
        assert not bruteforce.is_locked(realm, user)


def test_failures_older_than_max_delta_are_forgotten(realm, user):
    _configure(realm)
    t0 = time.time()
    with _at(t0):
        bruteforce.record_failure(realm, user)
    with _at(t0 + 10):
        bruteforce.record_failure(realm, user)
    with _at(t0 + 10 + 601):
        bruteforce.record_failure(realm, user)  # counts as the first again
        assert bruteforce.status(realm, user)["failures"] == 1
        assert not bruteforce.is_locked(realm, user)


def test_success_clears_the_record(realm, user):
    _configure(realm)
    t0 = time.time()
    for i in range(2):
        with _at(t0 + 10 * i):
            bruteforce.record_failure(realm, user)
    bruteforce.record_success(realm, user)
    assert bruteforce.status(realm, user)["failures"] == 0


def test_permanent_lockout_disables_the_user(realm, user):
    _configure(realm, permanent_lockout=True)
    t0 = time.time()
    for i in range(3):
        with _at(t0 + 10 * i):
            bruteforce.record_failure(realm, user)
    user.refresh_from_db()
    assert not user.enabled
    assert user.attributes[bruteforce.DISABLED_REASON_ATTRIBUTE] == bruteforce.PERMANENT_LOCKOUT


def test_permanent_lockout_after_max_temporary_lockouts(realm, user):
    _configure(realm, permanent_lockout=True, max_temporary_lockouts=1)
    t0 = time.time()
    for i in range(3):
        with _at(t0 + 10 * i):
            bruteforce.record_failure(realm, user)
    user.refresh_from_db()
    assert user.enabled and bruteforce.is_locked(realm, user)  # first lockout: temporary
    for i in range(3):
        with _at(t0 + 200 + 10 * i):
            bruteforce.record_failure(realm, user)
    user.refresh_from_db()
    assert not user.enabled
