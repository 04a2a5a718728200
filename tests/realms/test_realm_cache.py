"""The protocol-neutral realm cache: one copy of a client row per process whichever way it is
looked up, its realm the cached one, protocols' state dropped with the configuration when the
realm changes, disabled or unknown realms refused."""
import pytest
from django.http import Http404

from realms.data import realm_cache
from realms.models import Client, Realm

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh():
    realm_cache.clear()
    yield
    realm_cache.clear()


@pytest.fixture
def realm():
    realm = Realm.objects.create(name="cached")
    Client.objects.create(realm=realm, client_id="app")
    return realm


def test_client_rows_are_read_once_and_shared(realm, django_assert_num_queries):
    config = realm_cache.get_realm("cached")
    with django_assert_num_queries(1):
        by_client_id = config.client("app")
        by_pk = config.client_by_pk(by_client_id.pk)
        again = realm_cache.get_realm("cached").client("app")
    assert by_client_id is by_pk is again
    with django_assert_num_queries(0):
        assert by_pk.realm is config.realm
    assert config.client("nope") is None and config.client_by_pk("nope") is None


def test_a_change_in_the_realm_drops_configuration_and_extensions(realm):
    config = realm_cache.get_realm("cached")
    extension = config.extension("proto", lambda base: {"realm": base.realm.name})
    assert config.extension("proto", dict) is extension
    client = config.client("app")
    client.enabled = False
    client.save()
    fresh = realm_cache.get_realm("cached")
    assert fresh is not config and fresh.client("app").enabled is False
    assert fresh.extension("proto", lambda base: "new") == "new"


def test_unknown_or_disabled_realm_is_404(realm):
    with pytest.raises(Http404):
        realm_cache.get_realm("missing")
    realm.enabled = False
    realm.save()
    with pytest.raises(Http404):
        realm_cache.get_realm("cached")


def test_a_renamed_realm_answers_to_its_new_name_only(realm):
    assert realm_cache.get_realm("cached").realm.pk == realm.pk
    realm.name = "renamed"
    realm.save()
    assert realm_cache.get_realm("renamed").realm.pk == realm.pk
    with pytest.raises(Http404):
        realm_cache.get_realm("cached")
