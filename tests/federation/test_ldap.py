"""The LDAP user storage provider against a real slapd: sign-in by bind through the login form,
the password grant and the Admin API in each edit mode, password changes in the directory and
its policy's refusals, mappers (Active Directory's account control), syncs, the Admin API's
component and user-storage routes, Keycloak's export shape, and a directory that is down."""

import pytest

from federation.ldap.config import LDAP_ENTRY_DN, LDAP_ID
from federation.ldap.sync import sync
from realms.credentials import password_policy
from realms.models import Component, User
from realms.representation import export_realm, import_realm
from realms.signin import passwords
from realms.users import storage
from tests.realms.test_signin import (
    login_errors,
    password_grant,
    redirect_query,
    sign_in,
)

from .conftest import make_provider
from .slapd import MIN_PASSWORD_LENGTH, PEOPLE, SERVICE_DN, SERVICE_PASSWORD

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_caches")]
MAPPER = "org.keycloak.storage.ldap.mappers.LDAPStorageMapper"


# --- sign-in ------------------------------------------------------------------------------------

@pytest.mark.parametrize("edit_mode", ["READ_ONLY", "WRITABLE", "UNSYNCED"])
def test_directory_user_signs_in_by_bind_in_every_edit_mode(client, realm, web_app, directory, edit_mode):
    make_provider(realm, directory, editMode=edit_mode)
    directory.add_user("alice", "alice-password", given="Alice", sn="Liddell", mail="alice@example.org")
    assert "code" in redirect_query(sign_in(client, "alice", "alice-password"))
    user = User.objects.get(realm=realm, username="alice")
    assert (user.first_name, user.last_name, user.email) == ("Alice", "Liddell", "alice@example.org")
    assert user.attributes[LDAP_ENTRY_DN] == [f"uid=alice,{PEOPLE}"] and user.attributes[LDAP_ID][0]
    assert not user.credentials.exists()  # passwords are never imported
    assert password_grant(client, "alice", "alice-password").status_code == 200
    refused = {"error": "invalid_grant", "error_description": "Invalid user credentials"}
    assert password_grant(client, "alice", "wrong-password").json() == refused
    assert password_grant(client, "alice", "").json() == refused  # never an unauthenticated bind
    assert login_errors(realm)[-1] == "invalid_user_credentials"


def test_unknown_name_is_not_found_in_the_directory(realm, directory):
    make_provider(realm, directory)
    assert passwords.check_password(realm, "nobody", "x").error == passwords.USER_NOT_FOUND


def test_ldaps_and_starttls_check_the_server_certificate(realm, directory, settings):
    directory.add_user("tls", "tls-password")
    make_provider(realm, directory, connectionUrl=directory.ldaps_url)
    assert passwords.check_password(realm, "tls", "tls-password").ok
    component = Component.objects.get(realm=realm, name="ldap")
    component.config.update(connectionUrl=[directory.url], startTls=["true"], connectionPooling=["false"])
    component.save()
    assert passwords.check_password(realm, "tls", "tls-password").ok
    settings.IDP_OUTBOUND_CA_BUNDLE = ""  # the throw-away CA no longer trusted: no connection
    User.objects.filter(username="tls").delete()
    assert passwords.check_password(realm, "tls", "tls-password").error == passwords.USER_NOT_FOUND


def test_search_scope_custom_filter_and_trust_email(realm, directory):
    import ldap.modlist

    directory.add_user("zoe", "zoe-password", mail="zoe@example.org", employeeType="staff")
    directory.add_user("zed", "zed-password", employeeType="temp")
    sub = f"ou=contractors,{PEOPLE}"
    conn = directory.admin()
    conn.add_s(sub, ldap.modlist.addModlist({"objectClass": [b"organizationalUnit"], "ou": [b"contractors"]}))
    try:
        conn.add_s(f"uid=zack,{sub}", ldap.modlist.addModlist({
            "objectClass": [b"inetOrgPerson"], "uid": [b"zack"], "cn": [b"zack"], "sn": [b"zack"],
            "userPassword": [b"zack-password"]}))
        component = make_provider(realm, directory, customUserSearchFilter="(employeeType=staff)", trustEmail="true")
        zoe = passwords.check_password(realm, "zoe", "zoe-password").user
        assert zoe.email == "zoe@example.org" and zoe.email_verified  # trusted as the directory has it
        for name in ("zed", "zack"):  # outside the filter; below the users DN's level
            assert passwords.check_password(realm, name, f"{name}-password").error == passwords.USER_NOT_FOUND
        component.config.update(searchScope=["2"], customUserSearchFilter=[""])
        component.save()
        assert passwords.check_password(realm, "zack", "zack-password").ok
        assert passwords.check_password(realm, "zed", "zed-password").ok
    finally:
        conn.delete_s(f"uid=zack,{sub}")
        conn.delete_s(sub)
        conn.unbind_s()


# --- passwords ----------------------------------------------------------------------------------

def test_writable_password_change_goes_to_the_directory_and_its_policy_is_shown(realm, directory, admin_api):
    make_provider(realm, directory)
    directory.add_user("bob", "bob-password")
    user = passwords.check_password(realm, "bob", "bob-password").user
    resp = admin_api("put", f"acme/users/{user.pk}/reset-password", {"type": "password", "value": "brand-new-pass"})
    assert resp.status_code == 204, resp.content
    assert passwords.check_password(realm, "bob", "brand-new-pass").ok
    assert not passwords.check_password(realm, "bob", "bob-password").ok
    assert not user.credentials.exists()
    short = "x" * (MIN_PASSWORD_LENGTH - 1)
    with pytest.raises(password_policy.PasswordPolicyError) as refused:
        storage.set_password(realm, User.objects.get(pk=user.pk), short)
    assert "Password fails quality checking policy" in str(refused.value)  # the directory's own words
    resp = admin_api("put", f"acme/users/{user.pk}/reset-password", {"type": "password", "value": short})
    assert resp.status_code == 400 and "quality" in resp.json()["error_description"]


@pytest.mark.parametrize("validate", [True, False])
def test_validate_password_policy_applies_the_realms_policy_too(realm, directory, validate):
    realm.password_policy = "length(20)"
    realm.save()
    make_provider(realm, directory, validatePasswordPolicy=str(validate).lower())
    directory.add_user("vera", "vera-password")
    user = passwords.check_password(realm, "vera", "vera-password").user
    if validate:
        with pytest.raises(password_policy.PasswordPolicyError) as refused:
            storage.set_password(realm, user, "twelve-chars")
        assert refused.value.key == "invalidPasswordMinLengthMessage"
    else:  # Keycloak's default: only the directory's policy
        storage.set_password(realm, user, "twelve-chars")
    assert passwords.check_password(realm, "vera", "twelve-chars").ok is not validate


def test_read_only_refuses_password_and_profile_changes(realm, directory, admin_api):
    make_provider(realm, directory, editMode="READ_ONLY")
    directory.add_user("carl", "carl-password", mail="carl@example.org")
    user = passwords.check_password(realm, "carl", "carl-password").user
    with pytest.raises(password_policy.PasswordPolicyError) as refused:
        storage.set_password(realm, user, "another-password")
    assert refused.value.key == "readOnlyPasswordMessage"
    resp = admin_api("put", f"acme/users/{user.pk}", {"email": "changed@example.org"})
    assert resp.status_code == 400 and resp.json() == {"errorMessage": "User is read only!"}
    assert directory.get(f"uid=carl,{PEOPLE}", "mail")["mail"] == [b"carl@example.org"]


def test_writable_profile_change_is_written_back(realm, directory, admin_api):
    make_provider(realm, directory)
    directory.add_user("dora", "dora-password", mail="dora@example.org")
    user = passwords.check_password(realm, "dora", "dora-password").user
    resp = admin_api("put", f"acme/users/{user.pk}", {"email": "dora@new.example", "lastName": "Explorer"})
    assert resp.status_code == 204, resp.content
    entry = directory.get(f"uid=dora,{PEOPLE}", "mail", "sn")
    assert entry == {"mail": [b"dora@new.example"], "sn": [b"Explorer"]}


@pytest.mark.parametrize("edit_mode", ["WRITABLE", "READ_ONLY"])
def test_deleting_a_user_deletes_a_writable_directorys_entry(realm, directory, admin_api, edit_mode):
    component = make_provider(realm, directory, editMode=edit_mode)
    directory.add_user("yuri", "yuri-password")
    user = passwords.check_password(realm, "yuri", "yuri-password").user
    assert admin_api("delete", f"acme/users/{user.pk}").status_code == 204
    assert not User.objects.filter(pk=user.pk).exists()
    # WRITABLE: gone there too, so the next sync does not bring the user back; else re-imported.
    assert sync(Component.objects.get(pk=component.pk))["added"] == (0 if edit_mode == "WRITABLE" else 1)


def test_unsynced_password_and_profile_changes_stay_here(realm, directory, admin_api):
    make_provider(realm, directory, editMode="UNSYNCED")
    directory.add_user("erin", "erin-password", mail="erin@example.org")
    user = passwords.check_password(realm, "erin", "erin-password").user
    assert admin_api("put", f"acme/users/{user.pk}", {"email": "erin@here.example"}).status_code == 204
    assert directory.get(f"uid=erin,{PEOPLE}", "mail")["mail"] == [b"erin@example.org"]
    storage.set_password(realm, user, "local-password-1")
    assert passwords.check_password(realm, "erin", "local-password-1").ok
    assert not passwords.check_password(realm, "erin", "erin-password").ok
    assert directory.get(f"uid=erin,{PEOPLE}", "userPassword")["userPassword"] == [b"erin-password"]


def test_writable_with_sync_registrations_creates_the_entry(realm, directory, admin_api):
    # A user made before the provider: this process then knows the realm had none (and asks no more).
    assert admin_api("post", "acme/users", {"username": "early"}).status_code == 201
    make_provider(realm, directory, syncRegistrations="true")
    resp = admin_api("post", "acme/users", {"username": "newbie", "email": "newbie@example.org",
                                             "firstName": "New", "lastName": "Bie", "enabled": True,
                                             "credentials": [{"type": "password", "value": "newbie-password"}]})
    assert resp.status_code == 201, resp.content
    user = User.objects.get(realm=realm, username="newbie")
    assert user.federation_link.name == "ldap" and not user.credentials.exists()
    assert directory.get(f"uid=newbie,{PEOPLE}", "mail")["mail"] == [b"newbie@example.org"]
    assert passwords.check_password(realm, "newbie", "newbie-password").ok  # the password is the directory's
    assert User.objects.get(realm=realm, username="early").federation_link is None


# --- mappers ------------------------------------------------------------------------------------

def _account_control_provider(realm, directory, **overrides):
    component = make_provider(realm, directory, **overrides)
    Component.objects.create(realm=realm, name="MSAD account controls", provider_id="msad-user-account-control-mapper",
                             provider_type=MAPPER, parent_id=component.pk, config={})
    return component


def test_account_control_514_disables_and_enabling_writes_back(realm, directory, admin_api):
    _account_control_provider(realm, directory)
    directory.add_user("frank", "frank-password", ad_control=514)
    result = passwords.check_password(realm, "frank", "frank-password")
    assert result.error == passwords.USER_DISABLED and not result.user.enabled
    resp = admin_api("put", f"acme/users/{result.user.pk}", {"enabled": True})
    assert resp.status_code == 204, resp.content
    assert directory.get(f"uid=frank,{PEOPLE}", "userAccountControl")["userAccountControl"] == [b"512"]
    assert passwords.check_password(realm, "frank", "frank-password").ok


def test_account_control_514_set_later_disables_at_the_next_sign_in(realm, directory):
    _account_control_provider(realm, directory)
    directory.add_user("finn", "finn-password", ad_control=512)
    assert passwords.check_password(realm, "finn", "finn-password").ok  # imported, enabled
    directory.modify(f"uid=finn,{PEOPLE}", userAccountControl="514")
    result = passwords.check_password(realm, "finn", "finn-password")  # read at once, as Keycloak's mapper does
    assert result.error == passwords.USER_DISABLED and not User.objects.get(username="finn").enabled
    directory.modify(f"uid=finn,{PEOPLE}", userAccountControl="512")
    assert passwords.check_password(realm, "finn", "finn-password").ok


def test_account_control_must_change_password_asks_for_update_password(realm, directory):
    _account_control_provider(realm, directory)
    directory.add_user("gina", "gina-password", ad_control=512, pwdLastSet="0")
    directory.add_user("hank", "hank-password", ad_control=512 | 0x800000)
    for name in ("gina", "hank"):
        user = passwords.check_password(realm, name, f"{name}-password").user
        assert user.required_actions == ["UPDATE_PASSWORD"]
    storage.set_password(realm, User.objects.get(username="gina"), "gina-new-password")  # the required action's
    assert directory.get(f"uid=gina,{PEOPLE}", "pwdLastSet")["pwdLastSet"] == [b"-1"]


def test_must_change_password_on_the_form_shows_the_directorys_refusal_then_signs_in(client, realm, web_app,
                                                                                      directory):
    import re

    _account_control_provider(realm, directory)
    directory.add_user("gus", "gus-password", ad_control=512, pwdLastSet="0")
    page = sign_in(client, "gus", "gus-password")
    assert page.status_code == 200 and 'id="kc-passwd-update-form"' in page.content.decode()
    action = re.search(r'action="([^"]+)"', page.content.decode()).group(1).replace("&amp;", "&")
    short = "x" * (MIN_PASSWORD_LENGTH - 1)  # the realm has no policy: only the directory refuses it
    refused = client.post(action, {"password-new": short, "password-confirm": short}).content.decode()
    # Keycloak's message for a directory's refusal (its MSAD mapper's invalidPasswordGenericMessage).
    assert re.search(r'id="input-error-password"[^>]*>Invalid password: new password does not match password '
                     r'policies.<', refused)
    done = client.post(action, {"password-new": "gus-new-password", "password-confirm": "gus-new-password"})
    assert "code" in redirect_query(done)
    assert directory.get(f"uid=gus,{PEOPLE}", "pwdLastSet")["pwdLastSet"] == [b"-1"]
    assert passwords.check_password(realm, "gus", "gus-new-password").ok


def test_full_name_mapper_reads_and_writes_cn_and_a_hardcoded_ldap_attribute_is_set_on_creation(
        realm, directory, admin_api):
    component = make_provider(realm, directory, mappers=False, syncRegistrations="true")
    for name, kind, config in (
            ("username", "user-attribute-ldap-mapper", {"ldap.attribute": ["uid"],
                                                         "user.model.attribute": ["username"]}),
            ("full name", "full-name-ldap-mapper", {"ldap.full.name.attribute": ["cn"], "read.only": ["false"]}),
            ("type", "hardcoded-ldap-attribute-mapper", {"ldap.attribute.name": ["employeeType"],
                                                         "ldap.attribute.value": ["external"]})):
        Component.objects.create(realm=realm, name=name, provider_id=kind, provider_type=MAPPER,
                                 parent_id=component.pk, config=config)
    directory.add_user("ada", "ada-password", given="Ada Lovelace")  # cn "Ada Lovelace"
    ada = passwords.check_password(realm, "ada", "ada-password").user
    assert (ada.first_name, ada.last_name) == ("Ada", "Lovelace")
    assert admin_api("put", f"acme/users/{ada.pk}", {"firstName": "Augusta"}).status_code == 204
    assert directory.get(f"uid=ada,{PEOPLE}", "cn", "employeeType") == {"cn": [b"Augusta Lovelace"]}  # not on changes
    assert admin_api("post", "acme/users", {"username": "grace", "firstName": "Grace",
                                             "lastName": "Hopper"}).status_code == 201
    assert directory.get(f"uid=grace,{PEOPLE}", "cn", "employeeType") == {"cn": [b"Grace Hopper"],
                                                                         "employeeType": [b"external"]}


def test_group_and_role_mappers_import_memberships(realm, directory):
    component = make_provider(realm, directory)
    for name, kind, config in (
            ("groups", "group-ldap-mapper", {"groups.dn": ["ou=groups,dc=example,dc=org"], "mode": ["READ_ONLY"]}),
            ("hardcoded", "hardcoded-ldap-role-mapper", {"role": ["offline_access"]})):
        Component.objects.create(realm=realm, name=name, provider_id=kind, provider_type=MAPPER,
                                 parent_id=component.pk, config=config)
    dn = directory.add_user("ivan", "ivan-password")
    directory.add_group("engineers", [dn])
    user = passwords.check_password(realm, "ivan", "ivan-password").user
    assert [g.name for g in user.groups.all()] == ["engineers"]
    assert "offline_access" in {r.name for r in user.roles.all()}


# --- sync ---------------------------------------------------------------------------------------

def test_full_and_changed_sync_are_idempotent(realm, directory, admin_api):
    component = make_provider(realm, directory)
    for i in range(250):  # three pages of 100
        directory.add_user(f"user{i:03}", None, mail=f"user{i:03}@example.org")
    resp = admin_api("post", f"acme/user-storage/{component.pk}/sync?action=triggerFullSync")
    assert resp.status_code == 200
    assert resp.json() == {"ignored": False, "added": 250, "updated": 0, "removed": 0, "failed": 0,
                           "status": "250 imported users, 0 updated users"}
    assert sync(Component.objects.get(pk=component.pk))["added"] == 0  # again: nothing new
    directory.modify(f"uid=user007,{PEOPLE}", mail="seven@example.org")
    resp = admin_api("post", f"acme/user-storage/{component.pk}/sync?action=triggerChangedUsersSync")
    assert resp.json()["updated"] == 1 and resp.json()["added"] == 0
    assert User.objects.get(realm=realm, username="user007").email == "seven@example.org"
    assert admin_api("post", f"acme/user-storage/{component.pk}/sync?action=nope").status_code == 404


def test_unlink_and_remove_imported_users(realm, directory, admin_api):
    component = make_provider(realm, directory)
    directory.add_user("jack", "jack-password")
    directory.add_user("kate", "kate-password")
    sync(component)
    resp = admin_api("post", f"acme/user-storage/{component.pk}/remove-imported-users")
    assert resp.status_code == 204 and not User.objects.filter(federation_link=component).exists()
    sync(Component.objects.get(pk=component.pk))
    assert admin_api("post", f"acme/user-storage/{component.pk}/unlink-users").status_code == 204
    assert set(User.objects.filter(realm=realm, username__in=["jack", "kate"]).values_list(
        "federation_link", flat=True)) == {None}


def test_sync_periods_are_beat_entries_in_the_database(realm, directory):
    from django_celery_beat.models import PeriodicTask

    component = make_provider(realm, directory, fullSyncPeriod="3600", changedSyncPeriod="60")
    tasks = {t.name: t for t in PeriodicTask.objects.filter(task="federation.ldap_sync")}
    assert {t.interval.every for t in tasks.values()} == {3600, 60}
    component.config["changedSyncPeriod"] = ["-1"]
    component.save()
    assert PeriodicTask.objects.filter(task="federation.ldap_sync").count() == 1
    component.delete()
    assert not PeriodicTask.objects.filter(task="federation.ldap_sync").exists()


# --- Admin API: components, test connection -------------------------------------------------------

def test_components_api_creates_ldap_with_keycloak_default_mappers_and_hides_the_secret(realm, directory, admin_api):
    from .conftest import ldap_config

    resp = admin_api("post", "acme/components", {"name": "corp", "providerId": "ldap",
                                                  "providerType": "org.keycloak.storage.UserStorageProvider",
                                                  "parentId": realm.pk, "config": ldap_config(directory)})
    component_id = resp["Location"].rsplit("/", 1)[1]
    assert resp.status_code == 201
    stored = Component.objects.get(pk=component_id)
    assert SERVICE_PASSWORD not in str(stored.config)  # encrypted at rest
    rep = admin_api("get", f"acme/components/{component_id}").json()
    assert rep["config"]["bindCredential"] == ["**********"] and rep["providerId"] == "ldap"
    names = {c["name"] for c in admin_api("get", "acme/components", parent=component_id, type=MAPPER).json()}
    assert names == {"username", "first name", "last name", "email", "creation date", "modify date"}
    rep["config"]["usersDn"] = [PEOPLE]
    assert admin_api("put", f"acme/components/{component_id}", rep).status_code == 204
    directory.add_user("lena", "lena-password")
    assert passwords.check_password(realm, "lena", "lena-password").ok  # the masked secret kept the real one
    bad = admin_api("post", "acme/components", {"providerId": "ldap", "providerType":
                                                 "org.keycloak.storage.UserStorageProvider",
                                                 "config": ldap_config(directory, editMode="SOMETIMES")})
    assert bad.status_code == 400 and "editMode" in bad.json()["errorMessage"]
    assert admin_api("delete", f"acme/components/{component_id}").status_code == 204
    assert not Component.objects.filter(parent_id=component_id).exists()


def test_test_ldap_connection(realm, directory, admin_api):
    body = {"connectionUrl": directory.url, "bindDn": SERVICE_DN, "bindCredential": SERVICE_PASSWORD,
            "authType": "simple"}
    for action in ("testConnection", "testAuthentication"):
        assert admin_api("post", "acme/testLDAPConnection", {**body, "action": action}).status_code == 204
    wrong = admin_api("post", "acme/testLDAPConnection", {**body, "bindCredential": "nope",
                                                          "action": "testAuthentication"})
    assert wrong.status_code == 400 and wrong.json() == {"errorMessage": "LDAP test error"}
    component = make_provider(realm, directory)
    masked = {**body, "bindCredential": "**********", "componentId": component.pk, "action": "testAuthentication"}
    assert admin_api("post", "acme/testLDAPConnection", masked).status_code == 204
    tls = {**body, "connectionUrl": directory.ldaps_url, "action": "testAuthentication"}
    assert admin_api("post", "acme/testLDAPConnection", tls).status_code == 204


# --- Keycloak format ------------------------------------------------------------------------------

def test_export_writes_mappers_as_sub_components_and_imports_them_back(realm, directory):
    component = make_provider(realm, directory)
    directory.add_user("mona", "mona-password")
    sync(component)
    rep = export_realm(realm)
    [ldap_rep] = rep["components"]["org.keycloak.storage.UserStorageProvider"]
    assert ldap_rep["config"]["bindCredential"] == [SERVICE_PASSWORD]
    assert len(ldap_rep["subComponents"][MAPPER]) == 6
    rep["realm"] = "acme2"
    rep.pop("id", None)
    other = import_realm(rep).realm
    copy = Component.objects.get(realm=other, provider_id="ldap")
    assert Component.objects.filter(realm=other, parent_id=copy.pk, provider_type=MAPPER).count() == 6
    assert storage.open_config(copy)["bindCredential"] == [SERVICE_PASSWORD]
    assert SERVICE_PASSWORD not in str(copy.config)
