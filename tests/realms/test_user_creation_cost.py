"""Creating a user through the Admin API (docs/decisions/0036): what it no longer does that
it never needed, and what it still does (default role, policy, hash, admin event)."""
import pytest
from django.core.cache import caches

from realms import realm_cache
from realms.models import Event, User
from realms.shared_cache import GENERATIONS
from tests.realms.test_admin_rest_api import acme, master_api  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db


def _generation(realm):
    return caches[GENERATIONS].get(realm_cache._configs.generation_key(realm.pk), 0)


def test_creating_a_user_keeps_the_realms_cached_configuration(acme, master_api):
    config = realm_cache.get_realm("acme")
    generation = _generation(acme)
    resp = master_api("post", "acme/users", {"username": "new", "enabled": True, "credentials": [
        {"type": "password", "value": "New-password-1", "temporary": False}]})
    assert resp.status_code == 201, resp.content
    # No process drops the realm's flows, clients and roles because someone got an account.
    assert _generation(acme) == generation
    assert realm_cache.get_realm("acme") is config
    user = User.objects.get(realm=acme, username="new")
    assert user.roles.filter(pk=acme.default_role_id).exists()  # still the realm's default role
    assert user.check_password("New-password-1")
    assert Event.objects.filter(realm=acme, kind=Event.ADMIN, type="CREATE", resource_path=f"users/{user.pk}").exists()


def test_a_password_the_policy_refuses_still_creates_nothing(acme, master_api):
    acme.password_policy = "length(12)"
    acme.save()
    resp = master_api("post", "acme/users", {"username": "new", "credentials": [{"type": "password", "value": "short"}]})
    assert resp.status_code == 400
    assert not User.objects.filter(realm=acme, username="new").exists()
    assert not Event.objects.filter(realm=acme, kind=Event.ADMIN).exists()
