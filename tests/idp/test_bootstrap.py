import pytest
from django.contrib.auth import authenticate

from realms.bootstrap import ensure_bootstrap_admin, ensure_demo_realm
from realms.models import Client, Realm, User, has_realm_role

pytestmark = pytest.mark.django_db


def test_master_realm_exists_after_migrations():
    assert Realm.objects.filter(name="master").exists()


def test_bootstrap_admin_created_once_and_never_reset():
    user = ensure_bootstrap_admin("ops", "first-pass-1")
    assert user.realm.name == "master" and has_realm_role(user, "admin")
    assert authenticate(username="ops", password="first-pass-1") == user
    user.set_password("changed-pass-2")
    # A restart with the variables still set changes nothing.
    assert ensure_bootstrap_admin("ops", "first-pass-1") is None
    assert authenticate(username="ops", password="changed-pass-2") == user
    assert authenticate(username="ops", password="first-pass-1") is None


def test_bootstrap_admin_needs_a_password():
    with pytest.raises(ValueError, match="IDP_BOOTSTRAP_ADMIN_PASSWORD"):
        ensure_bootstrap_admin("ops", "")


def test_only_master_admins_are_console_staff():
    admin = ensure_bootstrap_admin("ops", "first-pass-1")
    assert admin.is_staff
    plain = User.objects.create(realm=admin.realm, username="plain")
    assert not plain.is_staff
    demo_password = ensure_demo_realm()
    demo_user = User.objects.get(realm__name="demo", username="alice")
    assert demo_user.check_password(demo_password)
    assert not demo_user.is_staff  # not the master realm
    # authenticate() looks in the master realm only.
    assert authenticate(username="alice", password=demo_password) is None


def test_demo_realm_has_a_pkce_client_and_is_created_once():
    assert ensure_demo_realm() is not None
    client = Client.objects.get(realm__name="demo", client_id="demo-app")
    assert client.public_client and client.pkce_method == "S256"
    assert ensure_demo_realm() is None
