"""The periodic purges (``realms.purges``): what each deletes and keeps, the batch and time
bounds, and when a rotated signing key may be retired."""
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from realms import purges
from realms.audit.events import ADMIN_EVENTS_EXPIRATION, emit
from realms.data import keys
from realms.models import Event, RealmKey, UserSession
from realms.representation.services import create_realm
from realms.sso import sessions
from realms.tasks import purge
from realms.users.accounts import create_user
from tests.oidc.browser.conftest import make_client

pytestmark = pytest.mark.usefixtures("fresh_caches")
DAY = timedelta(days=1)


@pytest.fixture
def realm(db):
    realm = create_realm("acme")
    realm.events_enabled = realm.admin_events_enabled = True
    realm.events_expiration = 3600
    realm.attributes = {**realm.attributes, ADMIN_EVENTS_EXPIRATION: "7200"}
    realm.save()
    return realm


@pytest.fixture
def user(realm):
    return create_user(realm, "bob", password="Bob-pass-1234", email="bob@example.com")


def _events(realm, n, **fields):
    return Event.objects.bulk_create([Event(realm=realm, type="LOGIN", **fields) for _ in range(n)])


def test_events_past_their_expiration_go_user_and_admin_each_by_its_own(realm):
    user_event = emit(realm, "LOGIN")
    admin_event = emit(realm, "CREATE", kind=Event.ADMIN, resource_type="USER")
    assert abs(admin_event.expires_at - user_event.expires_at - timedelta(hours=1)) < timedelta(seconds=1)
    kept = _events(realm, 1)[0]  # no expiration: kept for ever
    later = timezone.now() + timedelta(seconds=3601)
    assert purges.run(later)["realms.events"] == 1
    assert set(Event.objects.values_list("pk", flat=True)) == {admin_event.pk, kept.pk}
    assert purges.run(later + timedelta(hours=1))["realms.events"] == 1
    assert list(Event.objects.values_list("pk", flat=True)) == [kept.pk]


def test_a_batch_is_at_most_the_batch_size(realm):
    past = timezone.now() - DAY
    _events(realm, 25, expires_at=past)
    live = _events(realm, 3, expires_at=timezone.now() + DAY)
    with CaptureQueriesContext(connection) as queries:
        assert purges.delete_bounded(purges.expired_events(timezone.now()), batch=10, seconds=60) == 25
    deletes = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("DELETE")]
    assert len(deletes) == 3  # 10, 10, 5
    assert set(Event.objects.values_list("pk", flat=True)) == {e.pk for e in live}


def test_a_purge_stops_when_its_time_is_up_and_the_next_run_goes_on(realm):
    _events(realm, 25, expires_at=timezone.now() - DAY)
    assert purges.delete_bounded(purges.expired_events(timezone.now()), batch=10, seconds=0) == 10
    assert Event.objects.count() == 15
    assert purges.run(batch=10, seconds=0)["realms.events"] == 10
    assert purges.run(batch=10, seconds=60)["realms.events"] == 5
    assert not Event.objects.exists()


def test_expired_sessions_go_live_ones_stay_and_their_cached_copies_are_dropped(realm, user):
    stale = sessions.create_user_session(realm, user)
    offline = sessions.create_user_session(realm, user, offline=True)
    fresh = sessions.create_user_session(realm, user)
    assert sessions.get_valid_session(realm, stale.pk) is not None  # now cached
    UserSession.objects.filter(pk=stale.pk).update(last_refresh=timezone.now() - timedelta(hours=1))
    assert purges.run()["realms.sessions"] == 1
    assert set(UserSession.objects.values_list("pk", flat=True)) == {offline.pk, fresh.pk}
    assert cache.get(sessions.cache_key(stale.pk)) is None
    # Offline sessions end after Offline Session Idle (30 days).
    assert purges.run(timezone.now() + timedelta(days=31))["realms.sessions"] == 2


def test_expired_sessions_follow_each_realms_lifespans_in_one_condition_per_set_of_them(realm, user):
    from realms.models import Realm

    def with_idle(name, idle):
        other = create_realm(name)
        other.sso_session_idle_timeout = idle
        other.save()
        return other, sessions.create_user_session(other, create_user(other, "bob", password="Bob-pass-1234"))

    hour_ago = timezone.now() - timedelta(hours=1)
    short = [sessions.create_user_session(realm, user)]  # idle 30 minutes (Keycloak's default)
    long = [with_idle("two-hours", 7200)[1]]
    UserSession.objects.update(last_refresh=hour_ago)
    now = timezone.now()
    query = str(sessions.expired_sessions(now).query)
    assert query.count("SELECT") == 1 + len(set(Realm.objects.values_list(*sessions._LIFESPANS)))
    for n in range(3):  # more realms with lifespans seen already: the same query
        other, session = with_idle(f"short-{n}", realm.sso_session_idle_timeout)
        short.append(session)
        other, session = with_idle(f"long-{n}", 7200)
        long.append(session)
    UserSession.objects.update(last_refresh=hour_ago)
    assert str(sessions.expired_sessions(now).query) == query
    assert set(sessions.expired_sessions().values_list("pk", flat=True)) == {s.pk for s in short}
    assert purges.run()["realms.sessions"] == len(short)
    assert set(UserSession.objects.values_list("pk", flat=True)) == {s.pk for s in long}


def test_a_purge_that_fails_does_not_stop_the_others(realm, monkeypatch):
    from django.db import OperationalError

    def broken(now):
        raise OperationalError("lock timeout")

    monkeypatch.setitem(purges._purges, "realms.aaa", broken)
    _events(realm, 2, expires_at=timezone.now() - DAY)
    counts = purges.run()
    assert "realms.aaa" not in counts and counts["realms.events"] == 2


def test_the_beat_task_runs_every_registered_purge(realm):
    _events(realm, 2, expires_at=timezone.now() - DAY)
    counts = purge.apply().get()
    assert counts["realms.events"] == 2
    assert {"realms.sessions", "realms.keys", "webhooks.attempts", "webhooks.messages", "webhooks.received"} <= set(counts)


# Signing keys ----------------------------------------------------------------------------------

def _status(key):
    return RealmKey.objects.filter(pk=key.pk).values_list("status", flat=True).first()


def _rotated(realm):
    """(the key rotation made passive, its replacement)."""
    old = RealmKey.objects.get(realm=realm, algorithm="RS256", status=RealmKey.ACTIVE)
    new = keys.rotate_key(realm, "RS256")
    return old, new


def test_a_rotated_key_is_retired_once_nothing_it_signed_can_be_valid(realm):
    old, new = _rotated(realm)
    window = timedelta(seconds=realm.action_token_generated_by_admin_lifespan)  # the longest by default
    assert purges.run(new.created + window)["realms.keys"] == 0
    assert _status(old) == RealmKey.PASSIVE
    assert purges.run(new.created + window + timedelta(seconds=1))["realms.keys"] == 1
    assert _status(old) is None and _status(new) == RealmKey.ACTIVE


def test_a_client_access_token_lifespan_longer_than_the_realms_holds_the_key(realm):
    make_client(realm, "long", attributes={"access.token.lifespan": str(3 * 86400)})
    old, new = _rotated(realm)
    assert purges.run(new.created + 2 * DAY)["realms.keys"] == 0
    assert purges.run(new.created + 3 * DAY + timedelta(seconds=1))["realms.keys"] == 1


def test_a_session_older_than_the_rotation_holds_the_key(realm, user):
    offline = sessions.create_user_session(realm, user, offline=True)
    old, new = _rotated(realm)
    later = new.created + 2 * DAY
    UserSession.objects.filter(pk=offline.pk).update(last_refresh=later)  # kept alive by its client
    assert purges.run(later)["realms.keys"] == 0
    assert _status(old) == RealmKey.PASSIVE


def test_keys_nobody_rotated_out_and_secrets_are_never_retired(realm):
    later = timezone.now() + 365 * DAY
    by_hand = keys.generate_key(realm, "ES256", status=RealmKey.PASSIVE)  # made passive by an administrator
    hmac = keys.generate_key(realm, "HS512")
    keys.rotate_key(realm, "HS512")  # refresh and registration tokens may never expire
    imported = keys.store_key(realm, keys.new_key("RS384"), "RS384", status=RealmKey.PASSIVE, provider_id="rsa")
    keys.generate_key(realm, "RS384", priority=200)
    disabled = keys.generate_key(realm, "PS256", status=RealmKey.DISABLED)
    keys.generate_key(realm, "PS256", priority=200)
    assert purges.run(later)["realms.keys"] == 0
    for key in (by_hand, imported):
        assert _status(key) == RealmKey.PASSIVE
    assert _status(hmac) == RealmKey.PASSIVE and _status(disabled) == RealmKey.DISABLED
    assert RealmKey.objects.filter(realm=realm, status=RealmKey.ACTIVE).count() >= 4
