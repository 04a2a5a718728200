"""``realm_cache.find_realm`` (the enabled realm's cached configuration or None; ``get_realm`` is
it or 404) and the names it remembers: ``_ids`` keeps a realm's name only while the process keeps
its configuration, so a worker that served a thousand realms, or saw realms deleted, holds no
more names than the cache holds realms (decision 0107)."""
import pytest
from django.db import connection
from django.http import Http404
from django.test.utils import CaptureQueriesContext

from realms.data import realm_cache
from realms.models import Realm

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh(fresh_caches):
    pass


def test_find_realm_is_none_where_get_realm_is_404():
    Realm.objects.create(name="names-on")
    off = Realm.objects.create(name="names-off")
    off.enabled = False
    off.save()
    assert realm_cache.find_realm("names-on").realm.name == "names-on"
    assert realm_cache.get_realm("names-on") is realm_cache.find_realm("names-on")
    for name in ("names-off", "names-unknown"):
        assert realm_cache.find_realm(name) is None
        with pytest.raises(Http404):
            realm_cache.get_realm(name)


def test_a_deleted_realm_leaves_no_name_behind():
    survivor = Realm.objects.create(name="names-survivor")
    gone = [Realm.objects.create(name=f"names-gone-{n}") for n in range(3)]
    for realm in [survivor, *gone]:
        assert realm_cache.find_realm(realm.name).realm.pk == realm.pk
    for realm in gone:
        realm.delete()
    assert realm_cache._ids == {"names-survivor": survivor.pk}  # dropped one by one, not all cleared
    assert all(realm_cache.find_realm(realm.name) is None for realm in gone)
    assert realm_cache._ids == {"names-survivor": survivor.pk}


def test_names_leave_with_the_configurations_the_cap_lets_go(settings):
    settings.IDP_CACHE_EMBEDDED_REALMS_MAX_COUNT = 2
    names = [f"names-capped-{n}" for n in range(5)]
    for name in names:
        Realm.objects.create(name=name)
        assert realm_cache.find_realm(name) is not None
    assert set(realm_cache._ids) == set(names[-2:])
    assert realm_cache.find_realm(names[0]).realm.name == names[0]  # read again when asked
    assert set(realm_cache._ids) == {names[0], names[-1]}


def test_a_renamed_realm_is_found_by_its_new_name_only():
    realm = Realm.objects.create(name="names-before")
    assert realm_cache.find_realm("names-before") is not None
    realm.name = "names-after"
    realm.save()
    assert realm_cache.find_realm("names-before") is None
    assert realm_cache.find_realm("names-after").realm.pk == realm.pk
    assert realm_cache._ids == {"names-after": realm.pk}


def test_a_changed_realm_s_name_is_remembered_again_once_it_is_read_again():
    realm = Realm.objects.create(name="names-changed")
    realm_cache.find_realm("names-changed")
    realm.display_name = "Changed"
    realm.save()  # its configuration (and, with it, its name) let go
    assert "names-changed" not in realm_cache._ids
    assert realm_cache.find_realm("names-changed").realm.display_name == "Changed"
    with CaptureQueriesContext(connection) as queries:
        assert realm_cache.find_realm("names-changed").realm.display_name == "Changed"
    assert len(queries) == 0
