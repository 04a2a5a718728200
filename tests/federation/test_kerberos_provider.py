"""The ``kerberos`` user storage provider against a real MIT KDC: principals become realm users
on their first sign-in, passwords are checked by the KDC (the login form's check and the
password grant), the provider's settings take effect, and its components import and export as
Keycloak writes them, with their configuration validated."""
import sys

import pytest

from realms.models import Component, Credential, User
from realms.representation import RepresentationError, export_realm, import_realm
from realms.representation.services import create_realm
from realms.signin import passwords
from realms.users import storage

from .conftest import ALICE_PASSWORD, add_kerberos_component, kerberos_config
from .kdc import REALM

pytestmark = pytest.mark.django_db


@pytest.fixture
def realm(db):
    return create_realm("corp")


def test_first_password_sign_in_imports_the_principal_as_a_linked_user(realm, kdc):
    component = add_kerberos_component(realm, kdc)
    assert not User.objects.filter(realm=realm, username="alice").exists()

    result = passwords.check_password(realm, "alice", ALICE_PASSWORD)
    assert result.ok
    alice = User.objects.get(realm=realm, username="alice")
    assert alice.federation_link_id == component.pk
    assert alice.attributes["KERBEROS_PRINCIPAL"] == [f"alice@{REALM}"]
    assert alice.email == f"alice@{REALM}".lower()
    assert not Credential.objects.filter(user=alice).exists()  # the password stays in the KDC

    # Signed in again: the same user, the password checked by the KDC each time.
    assert passwords.check_password(realm, "alice", ALICE_PASSWORD).user.pk == alice.pk
    assert passwords.check_password(realm, "alice", "not alice's password").error == "invalid_user_credentials"
    assert passwords.check_password(realm, f"alice@{REALM}", ALICE_PASSWORD).user.pk == alice.pk


def test_unknown_principals_and_other_realms_are_not_found(realm, kdc):
    add_kerberos_component(realm, kdc)
    assert passwords.check_password(realm, "nobody", "x").error == "user_not_found"
    assert passwords.check_password(realm, "alice@OTHER.REALM", ALICE_PASSWORD).error == "user_not_found"
    assert not User.objects.filter(realm=realm).exists()


def test_password_authentication_off_refuses_the_right_password(realm, kdc):
    add_kerberos_component(realm, kdc, allowPasswordAuthentication="false")
    assert passwords.check_password(realm, "alice", ALICE_PASSWORD).error == "invalid_user_credentials"


def test_a_local_user_of_the_same_name_is_never_taken_over(realm, kdc):
    add_kerberos_component(realm, kdc)
    local = User.objects.create(realm=realm, username="alice")
    storage.set_password(local.realm, local, "local password")
    local.save()
    assert passwords.check_password(realm, "alice", ALICE_PASSWORD).error == "invalid_user_credentials"
    assert passwords.check_password(realm, "alice", "local password").ok
    assert User.objects.get(realm=realm, username="alice").federation_link is None


def test_update_profile_on_first_login_adds_the_required_action(realm, kdc):
    add_kerberos_component(realm, kdc, updateProfileFirstLogin="true")
    assert passwords.check_password(realm, "alice", ALICE_PASSWORD).user.required_actions == ["UPDATE_PROFILE"]


def test_edit_modes(realm, kdc):
    component = add_kerberos_component(realm, kdc)
    alice = passwords.check_password(realm, "alice", ALICE_PASSWORD).user
    provider = storage.provider_of(alice)
    assert provider.update_credential(realm, alice, Credential.PASSWORD, "new password") is False  # READ_ONLY

    component.config["editMode"] = ["UNSYNCED"]
    component.save()
    alice = User.objects.get(pk=alice.pk)
    provider = storage.provider_of(alice)
    assert provider.update_credential(realm, alice, Credential.PASSWORD, "a local password") is True
    # UNSYNCED: the password set here is the one checked from now on, the KDC's no longer.
    assert passwords.check_password(realm, "alice", "a local password").ok
    assert passwords.check_password(realm, "alice", ALICE_PASSWORD).error == "invalid_user_credentials"


def test_debug_logs_each_kdc_exchange(realm, kdc, caplog):
    add_kerberos_component(realm, kdc, debug="true")
    with caplog.at_level("INFO", logger="idp.federation.kerberos"):
        passwords.check_password(realm, "alice", ALICE_PASSWORD)
    assert f"password of alice@{REALM} accepted" in caplog.text
    caplog.clear()
    add_kerberos_component(create_realm("quiet"), kdc)
    with caplog.at_level("INFO", logger="idp.federation.kerberos"):
        passwords.check_password(realm.__class__.objects.get(name="quiet"), "alice", ALICE_PASSWORD)
    assert "accepted" not in caplog.text


def test_an_unreachable_kdc_refuses_the_password_and_says_why_in_the_log(realm, kdc, tmp_path, monkeypatch, caplog):
    add_kerberos_component(realm, kdc)
    alice = passwords.check_password(realm, "alice", ALICE_PASSWORD).user
    dead = tmp_path / "krb5.conf"
    dead.write_text(kdc.krb5_conf.read_text().replace(f"127.0.0.1:{kdc.port}", "127.0.0.1:9"))
    monkeypatch.setenv("KRB5_CONFIG", str(dead))
    result = passwords.check_password(realm, "alice", ALICE_PASSWORD)
    assert result.error == "invalid_user_credentials" and result.user.pk == alice.pk
    assert "the KDC could not be asked" in caplog.text


def test_password_grant_of_a_kerberos_user(client, realm, kdc):
    from tests.oidc.browser.conftest import make_client

    add_kerberos_component(realm, kdc)
    make_client(realm, "cli", direct_access_grants_enabled=True, public_client=True)
    url = "/realms/corp/protocol/openid-connect/token"
    ok = client.post(url, {"grant_type": "password", "client_id": "cli", "username": "alice",
                           "password": ALICE_PASSWORD, "scope": "openid"})
    assert ok.status_code == 200, ok.content
    bad = client.post(url, {"grant_type": "password", "client_id": "cli", "username": "alice", "password": "wrong"})
    assert bad.status_code == 400 and bad.json() == {"error": "invalid_grant", "error_description": "Invalid user credentials"}


# Import and export -------------------------------------------------------------------------------

def _rep(config):
    return {"realm": "krb", "components": {Component.USER_STORAGE: [
        {"id": "6b0e-kerberos", "name": "kerberos", "providerId": "kerberos", "subComponents": {},
         "config": config}]}, "users": [{"username": "alice", "federationLink": "6b0e-kerberos",
                                         "attributes": {"KERBEROS_PRINCIPAL": [f"alice@{REALM}"]}}]}


def test_components_round_trip_as_keycloak_writes_them(kdc):
    config = kerberos_config(kdc)
    rep = export_realm(import_realm(_rep(config)).realm)
    assert rep["components"][Component.USER_STORAGE] == [
        {"id": "6b0e-kerberos", "name": "kerberos", "providerId": "kerberos", "subComponents": {}, "config": config}]
    assert [u["federationLink"] for u in rep["users"]] == ["6b0e-kerberos"]


@pytest.mark.parametrize("change, message", [
    ({"keyTab": [""]}, "KeyTab is required (keyTab)"),
    ({"kerberosRealm": []}, "Kerberos realm is required (kerberosRealm)"),
    ({"allowPasswordAuthentication": ["yes"]}, "allowPasswordAuthentication must be true or false"),
    ({"editMode": ["WRITABLE"]}, "editMode must be one of READ_ONLY, UNSYNCED (got 'WRITABLE')"),
])
def test_an_invalid_configuration_fails_the_import_with_its_path(kdc, change, message):
    with pytest.raises(RepresentationError) as exc:
        import_realm(_rep({**kerberos_config(kdc), **change}))
    assert exc.value.path == f'components["{Component.USER_STORAGE}"][0].config'
    assert exc.value.message == message


def test_a_kerberos_provider_switches_the_spnego_step_on_and_its_removal_off(realm, kdc):
    from realms.models import AuthenticationExecution

    def spnego():
        return AuthenticationExecution.objects.get(realm=realm, flow__alias="browser",
                                                   authenticator="auth-spnego").requirement

    assert spnego() == "DISABLED"
    first = add_kerberos_component(realm, kdc)
    assert spnego() == "ALTERNATIVE"  # as Keycloak's onCreate
    second = add_kerberos_component(realm, kdc)
    first.delete()
    assert spnego() == "ALTERNATIVE"  # another Kerberos provider still needs it
    second.delete()
    assert spnego() == "DISABLED"
    step = AuthenticationExecution.objects.get(realm=realm, flow__alias="browser", authenticator="auth-spnego")
    step.requirement = "REQUIRED"
    step.save()
    add_kerberos_component(realm, kdc).delete()
    assert spnego() == "REQUIRED"  # an admin's own choice is left alone


@pytest.mark.parametrize("dev_mode, level", [(True, "DEBUG"), (False, "INFO")])
def test_a_server_without_gssapi_says_so_at_start_in_production_only(settings, monkeypatch, caplog, dev_mode, level):
    from federation.kerberos import registration

    settings.IDP_DEV_MODE = dev_mode
    monkeypatch.setitem(sys.modules, "federation.kerberos.provider", None)  # its import fails, as without gssapi
    with caplog.at_level("DEBUG", logger="idp.federation.kerberos"):
        registration.register()
    said = [r.levelname for r in caplog.records if "kerberos user federation is not available" in r.getMessage()]
    assert said == [level]
