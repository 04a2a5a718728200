import pytest

from realms.models import Client, Realm, User, has_realm_role
from realms.representation.bootstrap import ensure_bootstrap_admin, ensure_demo_realm
from realms.signin import passwords
from realms.users import storage
from tests.passwords import holds_password

pytestmark = pytest.mark.django_db


def test_master_realm_exists_after_migrations():
    assert Realm.objects.filter(name="master").exists()


def test_bootstrap_admin_created_once_and_never_reset():
    user = ensure_bootstrap_admin("ops", "first-pass-1")
    assert user.realm.name == "master" and has_realm_role(user, "admin")
    assert passwords.check_password(user.realm, "ops", "first-pass-1").password_valid
    storage.set_password(user.realm, user, "changed-pass-2")
    # A restart with the variables still set changes nothing.
    assert ensure_bootstrap_admin("ops", "first-pass-1") is None
    assert passwords.check_password(user.realm, "ops", "changed-pass-2").password_valid
    assert not passwords.check_password(user.realm, "ops", "first-pass-1").password_valid


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
    assert holds_password(demo_user, demo_password)
    assert not demo_user.is_staff  # not the master realm
    # The console signs in through the master realm's flow: a demo user is no one there.
    assert passwords.check_password(admin.realm, "alice", demo_password).user is None


def test_demo_realm_has_a_pkce_client_and_is_created_once():
    assert ensure_demo_realm() is not None
    client = Client.objects.get(realm__name="demo", client_id="demo-app")
    assert client.public_client and client.pkce_method == "S256"
    assert ensure_demo_realm() is None


# manage.py bootstrap_admin (Keycloak's bootstrap-admin) and createsuperuser ----------------------

def _bootstrap(*args, **env):
    import io

    from django.core.management import call_command

    out = io.StringIO()
    with pytest.MonkeyPatch.context() as mp:
        for name, value in env.items():
            mp.setenv(name, value)
        call_command("bootstrap_admin", *args, stdout=out)
    return out.getvalue()


def test_bootstrap_admin_user_is_a_temporary_master_admin_who_can_sign_in(client):
    from realms.models import Realm, User, has_realm_role
    from realms.representation.bootstrap import admin_exists
    from realms.signin.passwords import check_password

    assert not admin_exists()
    out = _bootstrap("user", "--username", "rescue", "--password:env", "RESCUE_PW", RESCUE_PW="rescue-pass-1")
    assert out.strip() == ("Temporary admin user 'rescue' created in realm master. "
                           "Create a permanent admin and delete this one.")
    master = Realm.objects.get(name="master")
    user = User.objects.get(realm=master, username="rescue")
    assert has_realm_role(user, "admin") and user.attributes == {"is_temporary_admin": ["true"]}
    assert check_password(master, "rescue", "rescue-pass-1").ok and admin_exists()


def test_bootstrap_admin_user_defaults_and_refusals():
    from django.core.management.base import CommandError

    _bootstrap("user", "--password:env", "PW", PW="temp-pass-1")
    from realms.models import User

    assert User.objects.filter(realm__name="master", username="temp-admin").exists()  # Keycloak's default
    with pytest.raises(CommandError, match="^Failed to create the temporary admin user: user 'temp-admin' already"):
        _bootstrap("user", "--password:env", "PW", PW="temp-pass-1")
    with pytest.raises(CommandError, match="no password given: name the environment variable holding it with "
                                           "--password:env"):
        _bootstrap("user", "--username", "x", "--no-prompt")
    with pytest.raises(CommandError, match="environment variable MISSING is not set or empty"):
        _bootstrap("user", "--username", "x", "--password:env", "MISSING")
    with pytest.raises(CommandError, match="environment variable NAME_VAR is not set or empty"):
        _bootstrap("user", "--username:env", "NAME_VAR", "--password:env", "PW", PW="p")


def test_bootstrap_admin_service_gets_admin_tokens_by_client_credentials(client, fresh_caches):
    import base64

    from realms.models import Client, User, has_realm_role

    out = _bootstrap("service", "--client-id", "ops-robot", "--client-secret:env", "SECRET", SECRET="robot-secret")
    assert "Temporary admin service account client 'ops-robot' created in realm master." in out
    robot = Client.objects.get(realm__name="master", client_id="ops-robot")
    assert robot.service_accounts_enabled and not robot.public_client
    assert has_realm_role(User.objects.get(service_account_client=robot), "admin")
    answer = client.post("/realms/master/protocol/openid-connect/token", {"grant_type": "client_credentials"},
                         HTTP_AUTHORIZATION="Basic " + base64.b64encode(b"ops-robot:robot-secret").decode())
    assert answer.status_code == 200
    token = answer.json()["access_token"]
    realms = client.get("/admin/realms", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert realms.status_code == 200 and "master" in [r["realm"] for r in realms.json()]


def test_createsuperuser_says_what_to_run_instead():
    from django.core.management import call_command
    from django.core.management.base import CommandError

    with pytest.raises(CommandError) as exc:
        call_command("createsuperuser", interactive=False, username="root")
    assert str(exc.value) == ("createsuperuser is not used here: create the master realm's admin with "
                              "manage.py bootstrap_admin user --username root --password:env VARIABLE")
