"""Whether a realm has LDAP providers (every new user asks: one with sync registrations gets the
entry) is kept with the realm's cached configuration, not in a map of its own: it goes with the
realm when the realm is deleted or let go past the cap, and changes only when a provider is made
or removed (a sync writing its own row lets nothing go)."""
from django.db import connection
from django.test.utils import CaptureQueriesContext

from federation.ldap import hooks
from realms.data import realm_cache
from realms.models import Component, Realm
from realms.users.accounts import create_user

# The provider is never reached: no user of these tests is created once it exists.
CONFIG = {"connectionUrl": ["ldap://127.0.0.1:1"], "usersDn": ["ou=people,dc=example,dc=org"],
          "editMode": ["WRITABLE"], "fullSyncPeriod": ["-1"], "changedSyncPeriod": ["-1"]}


def _provider(realm):
    return Component.objects.create(realm=realm, name="ldap", provider_id="ldap", provider_type=Component.USER_STORAGE,
                                    parent_id=realm.pk, config=CONFIG)


def _answer(realm):
    with CaptureQueriesContext(connection) as queries:
        answer = hooks._has_ldap(realm)
    return answer, len(queries)


def test_the_answer_is_kept_with_the_realm_and_follows_providers_made_and_removed(realm):
    create_user(realm, "early")  # asks once
    assert _answer(realm) == (False, 0)
    provider = _provider(realm)
    assert _answer(realm)[0] is True
    config = realm_cache.find_realm(realm.name)
    provider.config = {**provider.config, "lastSync": ["1"]}
    provider.save(update_fields=["config"])  # what a sync writes
    assert realm_cache.find_realm(realm.name) is config
    assert _answer(realm) == (True, 0)
    provider.delete()
    assert _answer(realm)[0] is False


def test_a_deleted_realm_leaves_nothing_behind(realm):
    others = [Realm.objects.create(name=f"ldap-gone-{n}") for n in range(3)]
    for other in [realm, *others]:
        assert hooks._has_ldap(other) is False
    assert all(other.pk in realm_cache._configs._entries for other in others)
    for other in others:
        other.delete()
    assert not any(other.pk in realm_cache._configs._entries for other in others)
    assert _answer(realm) == (False, 0)  # the realm still there keeps its answer


def test_past_the_cap_the_answer_goes_with_the_realm(realm, settings):
    settings.IDP_CACHE_EMBEDDED_REALMS_MAX_COUNT = 2
    realms = [Realm.objects.create(name=f"ldap-capped-{n}") for n in range(4)]
    for other in realms:
        assert hooks._has_ldap(other) is False
    assert set(realm_cache._configs._entries) == {realms[2].pk, realms[3].pk}
