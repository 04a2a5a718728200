"""SSO sessions (spec 1 §3): idle and max timeouts, remember-me, offline, client overrides,
disabled user, survival of a restart (a fresh cache), and the session_ended signal."""
from datetime import timedelta

import time_machine
from django.core.cache import cache
from django.utils import timezone

from realms.models import ClientSession, UserSession
from realms.sso import sessions


def _travel(seconds):
    return time_machine.travel(timezone.now() + timedelta(seconds=seconds), tick=False)


def test_session_is_stored_and_survives_a_restart(realm, user):
    s = sessions.create_user_session(realm, user, ip_address="127.0.0.1", auth_methods=["pwd"])
    assert UserSession.objects.filter(pk=s.pk, user=user, ip_address="127.0.0.1").exists()
    cache.clear()  # a restart: local caches are gone, the database is not
    found = sessions.get_valid_session(realm, s.pk)
    assert found is not None and found.pk == s.pk and found.user == user
    assert found.auth_methods == ["pwd"]


def test_cached_session_is_served_without_a_query(realm, user, django_assert_num_queries):
    s = sessions.create_user_session(realm, user)
    sessions.get_valid_session(realm, s.pk)  # loads into the cache
    with django_assert_num_queries(0):
        assert sessions.get_valid_session(realm, s.pk).pk == s.pk


def test_the_cached_session_holds_no_credential_rows_nor_the_realm(realm, user, django_assert_num_queries):
    import pickle

    from realms.models import Credential

    Credential.objects.create(user=user, type=Credential.OTP, secret_data="otp-secret-never-cached")
    assert user.stored_credentials()  # read by this sign-in, as the flows do
    s = sessions.create_user_session(realm, user)
    sessions._cache_put(s)
    raw = pickle.dumps(cache.get(sessions.cache_key(s.pk)))
    assert b"otp-secret-never-cached" not in raw and b"_credentials" not in raw
    assert realm.name.encode() not in raw  # the realm row stays out: readers hold it
    assert user.stored_credentials()  # the live instance keeps what it read
    with django_assert_num_queries(0):
        found = sessions.get_valid_session(realm, s.pk)
        assert found.user.realm is realm and found.realm is realm


def test_unknown_or_other_realm_session_is_none(realm, user):
    from realms.models import Realm

    s = sessions.create_user_session(realm, user)
    other = Realm.objects.create(name="other")
    assert sessions.get_valid_session(other, s.pk) is None
    assert sessions.get_valid_session(realm, "nope") is None
    assert sessions.get_valid_session(realm, "") is None


def test_idle_timeout_ends_session(realm, user):
    s = sessions.create_user_session(realm, user)
    with _travel(realm.sso_session_idle_timeout - 10):
        assert sessions.get_valid_session(realm, s.pk) is not None
    with _travel(realm.sso_session_idle_timeout + 1):
        assert sessions.get_valid_session(realm, s.pk) is None
    assert not UserSession.objects.filter(pk=s.pk).exists()


def test_touch_resets_idle_timer_and_max_still_ends_it(realm, user):
    realm.sso_session_idle_timeout = 100
    realm.sso_session_max_lifespan = 250
    realm.save()
    s = sessions.create_user_session(realm, user)
    for step in (80, 160, 240):
        with _travel(step):
            found = sessions.get_valid_session(realm, s.pk)
            assert found is not None, step
            sessions.touch(found)
    cache.clear()
    with _travel(255):  # idle only 15 s, but older than SSO Session Max
        assert sessions.get_valid_session(realm, s.pk) is None


def test_touch_writes_at_most_every_few_seconds(realm, user, django_assert_num_queries):
    s = sessions.create_user_session(realm, user)
    with _travel(1), django_assert_num_queries(0):
        sessions.touch(s)
    with _travel(sessions.TOUCH_INTERVAL.total_seconds() + 1), django_assert_num_queries(1):
        sessions.touch(s)
    assert UserSession.objects.get(pk=s.pk).last_refresh > s.started


def test_remember_me_uses_its_own_timeouts(realm, user):
    realm.sso_session_idle_timeout_remember_me = 7 * 86400
    realm.sso_session_max_lifespan_remember_me = 30 * 86400
    realm.save()
    plain = sessions.create_user_session(realm, user)
    remembered = sessions.create_user_session(realm, user, remember_me=True)
    with _travel(realm.sso_session_idle_timeout + 60):
        assert sessions.get_valid_session(realm, plain.pk) is None
        assert sessions.get_valid_session(realm, remembered.pk) is not None
    with _travel(7 * 86400 + 60):
        assert sessions.get_valid_session(realm, remembered.pk) is None


def test_remember_me_without_own_settings_falls_back(realm, user):
    remembered = sessions.create_user_session(realm, user, remember_me=True)
    with _travel(realm.sso_session_idle_timeout + 1):
        assert sessions.get_valid_session(realm, remembered.pk) is None


def test_offline_session_idles_for_30_days(realm, user):
    offline = sessions.create_user_session(realm, user, offline=True)
    with _travel(realm.sso_session_max_lifespan + 3600):  # far beyond any SSO timeout
        found = sessions.get_valid_session(realm, offline.pk)
        assert found is not None
    with _travel(30 * 86400 + 60):
        assert sessions.get_valid_session(realm, offline.pk) is None


def test_disabled_user_ends_session_at_once(realm, user):
    s = sessions.create_user_session(realm, user)
    assert sessions.get_valid_session(realm, s.pk) is not None  # cached now
    user.enabled = False
    user.save()
    assert sessions.get_valid_session(realm, s.pk) is None
    assert not UserSession.objects.filter(pk=s.pk).exists()


def test_client_session_per_client_and_reuse(realm, user, client_app, public_app):
    s = sessions.create_user_session(realm, user)
    a = sessions.get_or_create_client_session(s, client_app, redirect_uri="https://app.example/cb", scope="openid")
    b = sessions.get_or_create_client_session(s, public_app, redirect_uri="https://spa.example/cb")
    again = sessions.get_or_create_client_session(s, client_app, scope="openid email")
    assert a.pk == again.pk and a.pk != b.pk
    assert ClientSession.objects.filter(user_session=s).count() == 2
    assert ClientSession.objects.get(pk=a.pk).scope == "openid email"


def test_a_client_signing_in_again_changes_its_session_in_one_statement(realm, user, client_app,
                                                                          django_assert_num_queries):
    s = sessions.create_user_session(realm, user)
    first = sessions.get_or_create_client_session(s, client_app, redirect_uri="https://app.example/cb",
                                                  scope="openid", notes={"acr": "1", "kept": "k", "gone": "g"})
    ClientSession.objects.filter(pk=first.pk).update(last_refresh=timezone.now() - timedelta(minutes=5))
    with django_assert_num_queries(1):
        again = sessions.get_or_create_client_session(s, client_app, scope="openid email",
                                                      notes={"acr": "2", "gone": None, "new": "n"})
    stored = ClientSession.objects.get(pk=first.pk)
    for found in (again, stored):
        assert found.pk == first.pk and found.started == first.started
        assert found.redirect_uri == "https://app.example/cb"  # blank: kept
        assert found.scope == "openid email"
        assert found.notes == {"acr": "2", "kept": "k", "new": "n"}
        assert timezone.now() - found.last_refresh < timedelta(minutes=1)


def test_client_session_expiry_defaults_to_sso_expiry(realm, user, client_app):
    s = sessions.create_user_session(realm, user)
    cs = sessions.get_or_create_client_session(s, client_app)
    assert sessions.client_session_expiry(cs) == sessions.session_expiry(realm, s)
    assert sessions.client_session_expiry(cs) == s.last_refresh + timedelta(seconds=1800)


def test_client_attributes_shorten_client_session(realm, user, client_app):
    client_app.attributes = {"client.session.idle.timeout": "120", "client.session.max.lifespan": "600"}
    client_app.save()
    s = sessions.create_user_session(realm, user)
    cs = sessions.get_or_create_client_session(s, client_app)
    assert sessions.client_session_expiry(cs) == cs.last_refresh + timedelta(seconds=120)
    with _travel(100):
        assert sessions.client_session_valid(cs)
    with _travel(130):
        assert not sessions.client_session_valid(cs)
    with _travel(590):
        sessions.touch(s, cs)
        assert sessions.client_session_expiry(cs) == cs.started + timedelta(seconds=600)


def test_client_override_never_extends_the_sso_session(realm, user, client_app):
    client_app.attributes = {"client.session.idle.timeout": "999999"}
    client_app.save()
    s = sessions.create_user_session(realm, user)
    cs = sessions.get_or_create_client_session(s, client_app)
    assert sessions.client_session_expiry(cs) == sessions.session_expiry(realm, s)


def test_realm_client_session_idle_applies_without_attribute(realm, user, client_app):
    realm.client_session_idle_timeout = 300
    realm.save()
    s = sessions.create_user_session(realm, user)
    cs = sessions.get_or_create_client_session(s, client_app)
    assert sessions.client_session_expiry(cs) == cs.last_refresh + timedelta(seconds=300)


def test_end_session_signals_then_deletes(realm, user, client_app):
    s = sessions.create_user_session(realm, user)
    sessions.get_or_create_client_session(s, client_app)
    sessions.get_valid_session(realm, s.pk)  # cached
    seen = []

    def receiver(sender, user_session, client_sessions, reason, **kwargs):
        seen.append((user_session.pk, [c.client.client_id for c in client_sessions], reason,
                     UserSession.objects.filter(pk=user_session.pk).exists()))

    sessions.session_ended.connect(receiver)
    try:
        sessions.end_session(s, reason="logout")
    finally:
        sessions.session_ended.disconnect(receiver)
    assert seen == [(s.pk, ["web-app"], "logout", True)]
    assert sessions.get_valid_session(realm, s.pk) is None
    assert not ClientSession.objects.filter(user_session_id=s.pk).exists()


def test_purge_deletes_only_expired(realm, user):
    realm.sso_session_idle_timeout_remember_me = 86400
    realm.save()
    fresh = sessions.create_user_session(realm, user)
    old = sessions.create_user_session(realm, user)
    remembered = sessions.create_user_session(realm, user, remember_me=True)
    offline = sessions.create_user_session(realm, user, offline=True)
    with _travel(3600):
        sessions.touch(fresh)
        assert sessions.expired_sessions().delete()[1]["realms.UserSession"] == 1
    remaining = set(UserSession.objects.values_list("pk", flat=True))
    assert remaining == {fresh.pk, remembered.pk, offline.pk}
    assert old.pk not in remaining


def test_purge_task_removes_expired_sessions(realm, user):
    from realms.tasks import purge

    s = sessions.create_user_session(realm, user)
    with _travel(realm.sso_session_idle_timeout + 1):
        assert purge.apply().get()["realms.sessions"] == 1
    assert not UserSession.objects.filter(pk=s.pk).exists()
