"""The LDAP provider against a real slapd, beyond sign-in and passwords (test_ldap.py): a directory
that is down or slow, Import Users off (the row a cache under the cache policy), connections
(paging, pooling, timeouts), Active Directory's password attribute, registration, more mappers."""
import base64
import contextlib
import socket
import ssl
import threading
import time

import ldap
import pytest

from federation.ldap.sync import sync
from realms.models import Component, User
from realms.representation import export_realm, import_realm
from realms.signin import passwords
from realms.users import storage
from realms.users.accounts import create_user
from tests.realms.test_signin import (
    password_grant,
    redirect_query,
    sign_in,
)

from .conftest import make_provider
from .slapd import MIN_PASSWORD_LENGTH, PEOPLE, SERVICE_DN, SERVICE_PASSWORD, SIZE_LIMIT

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_caches")]
MAPPER = "org.keycloak.storage.ldap.mappers.LDAPStorageMapper"

# --- faults ---------------------------------------------------------------------------------------

def test_directory_down_local_users_sign_in_federated_get_an_error_nothing_lost(client, realm, web_app, directory):
    component = make_provider(realm, directory)
    directory.add_user("nina", "nina-password")
    sync(component)
    create_user(realm, "local", password="local-password-1")
    directory.stop()
    assert passwords.check_password(realm, "local", "local-password-1").ok
    assert passwords.check_password(realm, "nina", "nina-password").error == passwords.USER_STORAGE_UNAVAILABLE
    assert password_grant(client, "nina", "nina-password").json()["error"] == "invalid_grant"
    page = sign_in(client, "nina", "nina-password").content.decode()
    assert "The user directory cannot be reached. Please try again later." in page  # a clear error
    assert "code" in redirect_query(sign_in(client, "local", "local-password-1"))
    assert User.objects.filter(realm=realm, username="nina", federation_link=component).exists()
    directory.start()
    assert passwords.check_password(realm, "nina", "nina-password").ok  # resumes by itself
    assert sync(Component.objects.get(pk=component.pk))["failed"] == 0


def test_a_scheduled_sync_while_the_directory_is_down_is_skipped_and_the_next_completes(realm, directory, caplog):
    from federation.tasks import ldap_sync

    component = make_provider(realm, directory)
    directory.add_user("xena", None)
    directory.stop()
    assert ldap_sync(component.pk) is None  # the beat's task, run here: no error, nothing imported
    assert "sync skipped, directory unavailable" in caplog.text
    assert Component.objects.get(pk=component.pk).get("lastSync") == ""
    directory.start()
    assert ldap_sync(component.pk)["added"] == 1
    assert Component.objects.get(pk=component.pk).get("lastSync") != ""


def test_listing_imported_users_sends_no_directory_query(realm, directory, admin_api):
    component = make_provider(realm, directory)
    for i in range(100):
        directory.add_user(f"list{i:03}", None)
    sync(component)
    directory.stop()
    resp = admin_api("get", "acme/users", max=200)
    assert resp.status_code == 200
    assert sum(1 for u in resp.json() if u.get("federationLink") == component.pk) == 100


# --- Import Users off: the row is a cache under the cache policy ---------------------------------

@pytest.mark.parametrize("policy, fresh", [("NO_CACHE", True), ("DEFAULT", False)])
def test_import_off_reads_the_directory_under_the_cache_policy(realm, directory, policy, fresh):
    make_provider(realm, directory, importEnabled="false", cachePolicy=policy)
    directory.add_user("pia", "pia-password", mail="pia@example.org")
    assert passwords.check_password(realm, "pia", "pia-password").ok
    directory.modify(f"uid=pia,{PEOPLE}", mail="pia@new.example")
    user = passwords.check_password(realm, "pia", "pia-password").user
    assert user.email == ("pia@new.example" if fresh else "pia@example.org")
    assert sync(Component.objects.get(realm=realm, name="ldap"))["ignored"]  # nothing imported to sync


def test_import_off_max_lifespan_and_a_removed_entry(realm, directory, time_machine):
    make_provider(realm, directory, importEnabled="false", cachePolicy="MAX_LIFESPAN", maxLifespan="60000")
    directory.add_user("quin", "quin-password", mail="quin@example.org")
    time_machine.move_to("2026-11-24 10:00:00+00:00", tick=False)
    assert passwords.check_password(realm, "quin", "quin-password").ok
    directory.modify(f"uid=quin,{PEOPLE}", mail="quin@new.example")
    time_machine.move_to("2026-11-24 10:00:59+00:00", tick=False)
    assert passwords.check_password(realm, "quin", "quin-password").user.email == "quin@example.org"
    time_machine.move_to("2026-11-24 10:01:01+00:00", tick=False)
    assert passwords.check_password(realm, "quin", "quin-password").user.email == "quin@new.example"
    conn = directory.admin()
    conn.delete_s(f"uid=quin,{PEOPLE}")
    conn.unbind_s()
    time_machine.move_to("2026-11-24 10:03:00+00:00", tick=False)
    assert passwords.check_password(realm, "quin", "quin-password").error == passwords.USER_NOT_FOUND
    assert not User.objects.filter(realm=realm, username="quin").exists()


@pytest.mark.postgresql
def test_a_large_sync_refreshes_the_planners_statistics(realm, directory, monkeypatch):
    """A sync that imports many users ANALYZEs the user table (here with the threshold lowered to
    the directory's 40 users), so the planner knows the rows a sign-in's lookup reads among."""
    from django.db import connection

    from realms.data import rows

    monkeypatch.setattr(rows, "ANALYZE_AFTER", 40)
    component = make_provider(realm, directory)
    directory.add_users("stat", 40)
    assert sync(component)["added"] == 40
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE relname = 'realms_user'")
        assert cursor.fetchone()[0] == User.objects.count()


# --- connections: paging, pooling, timeouts -------------------------------------------------------

def test_sync_pages_past_the_directorys_size_limit(realm, directory):
    directory.add_users("page", SIZE_LIMIT + 50)
    component = make_provider(realm, directory, batchSizeForSync="100")
    assert sync(component)["added"] == SIZE_LIMIT + 50
    component.config["pagination"] = ["false"]
    component.save()
    with pytest.raises(ldap.SIZELIMIT_EXCEEDED):  # one search: the directory stops it at its limit
        sync(Component.objects.get(pk=component.pk))


def _connections_to(port):
    """This host's established TCP connections to ``port`` (client ends)."""
    with open("/proc/net/tcp") as table:
        rows = [line.split() for line in table.read().splitlines()[1:]]
    return sorted(int(local.split(":")[1], 16) for _, local, remote, state, *_ in rows
                  if state == "01" and int(remote.split(":")[1], 16) == port)


@pytest.mark.parametrize("pooling", [True, False])
def test_connection_pooling_keeps_one_bound_connection(realm, directory, pooling):
    component = make_provider(realm, directory, connectionPooling=str(pooling).lower())
    directory.add_user("pool", "pool-password")
    before = _connections_to(directory.port)
    provider = storage.provider_for(component)
    seen = set()
    for _ in range(3):
        assert provider.get_user_by_username(realm, "pool") is not None
        seen.update(set(_connections_to(directory.port)) - set(before))
    assert len(seen) == (1 if pooling else 0)  # one connection reused, or each closed after use


@pytest.fixture
def silent_server():
    """A TCP server that accepts connections and never answers (a hung directory)."""
    server = socket.create_server(("127.0.0.1", 0))
    accepted = []

    def accept():
        with contextlib.suppress(OSError):  # the socket closed at teardown ends the loop
            while True:
                accepted.append(server.accept())

    threading.Thread(target=accept, daemon=True).start()
    yield f"ldap://127.0.0.1:{server.getsockname()[1]}"
    server.close()


@pytest.fixture
def full_backlog():
    """A port whose listen queue is full: a connection attempt is never answered."""
    server = socket.create_server(("127.0.0.1", 0), backlog=0)
    waiting = []
    for _ in range(3):
        pending = socket.socket()
        pending.setblocking(False)
        pending.connect_ex(("127.0.0.1", server.getsockname()[1]))
        waiting.append(pending)
    yield f"ldap://127.0.0.1:{server.getsockname()[1]}"
    for pending in waiting:
        pending.close()
    server.close()


@pytest.mark.parametrize("server", ["silent_server", "full_backlog"])
def test_connect_and_read_timeouts_take_effect(realm, directory, request, server):
    # The defaults (5 s to connect, 10 s to read) would make this take far longer than 3 s.
    component = make_provider(realm, directory, connectionUrl=request.getfixturevalue(server),
                              connectionTimeout="300", readTimeout="300", connectionPooling="false")
    started = time.monotonic()
    with pytest.raises(storage.Unavailable):
        storage.provider_for(component).get_user_by_username(realm, "anyone")
    assert time.monotonic() - started < 3


# --- cache policies of Import Users off ------------------------------------------------------------

@pytest.mark.parametrize("policy, settings_, stale_until, fresh_from", [
    # Tuesday 10:00 read; evicted every day at 03:30.
    ("EVICT_DAILY", {"evictionHour": "3", "evictionMinute": "30"}, "2026-11-25 03:29", "2026-11-25 03:31"),
    # Evicted on Thursdays (Keycloak's evictionDay 5; 1 is Sunday) at 00:00.
    ("EVICT_WEEKLY", {"evictionDay": "5", "evictionHour": "0"}, "2026-11-25 23:59", "2026-11-26 00:01"),
])
def test_import_off_evicts_daily_and_weekly(realm, directory, time_machine, settings, policy, settings_, stale_until,
                                            fresh_from):
    settings.TIME_ZONE = "UTC"
    make_provider(realm, directory, importEnabled="false", cachePolicy=policy, **settings_)
    directory.add_user("ruth", "ruth-password", mail="ruth@example.org")
    time_machine.move_to("2026-11-24 10:00:00+00:00", tick=False)
    assert passwords.check_password(realm, "ruth", "ruth-password").ok
    directory.modify(f"uid=ruth,{PEOPLE}", mail="ruth@new.example")
    time_machine.move_to(f"{stale_until}:00+00:00", tick=False)
    assert passwords.check_password(realm, "ruth", "ruth-password").user.email == "ruth@example.org"
    time_machine.move_to(f"{fresh_from}:00+00:00", tick=False)
    assert passwords.check_password(realm, "ruth", "ruth-password").user.email == "ruth@new.example"


# --- Active Directory's password attribute, registration, more mappers --------------------------

def test_active_directory_password_is_written_to_unicode_pwd(realm, directory, admin_api):
    make_provider(realm, directory, vendor="ad", usePasswordModifyExtendedOp="true")
    directory.add_user("sara", "sara-password", objectClass=[b"inetOrgPerson", b"adAccount"])
    user = passwords.check_password(realm, "sara", "sara-password").user
    resp = admin_api("put", f"acme/users/{user.pk}/reset-password", {"type": "password", "value": "sara-new-pass"})
    assert resp.status_code == 204, resp.content
    entry = directory.get(f"uid=sara,{PEOPLE}", "unicodePwd", "userPassword")
    assert entry == {"unicodePwd": ['"sara-new-pass"'.encode("utf-16-le")], "userPassword": [b"sara-password"]}


def test_self_registration_creates_the_entry_with_sync_registrations(realm, web_app, directory):
    from django.test import Client as HttpClient

    from tests.selfservice.test_reset_and_registration import (
        FORM,
        form_action,
        register_page,
    )

    realm.registration_allowed = True
    realm.save()
    make_provider(realm, directory, syncRegistrations="true")
    http = HttpClient()
    short = "x" * (MIN_PASSWORD_LENGTH - 1)  # the realm has no policy: only the directory refuses it
    refused = http.post(form_action(register_page(http)), {**FORM, "username": "tony", "email": "tony@example.org",
                                                           "password": short, "password-confirm": short})
    assert refused.status_code == 400 and "Password fails quality checking policy" in refused.content.decode()
    assert not User.objects.filter(realm=realm, username="tony").exists()
    with pytest.raises(ldap.NO_SUCH_OBJECT):  # nor its entry: the name can be registered again
        directory.get(f"uid=tony,{PEOPLE}")
    http = HttpClient()
    done = http.post(form_action(register_page(http)), {**FORM, "username": "tina", "email": "tina@example.org"})
    assert "code" in redirect_query(done)
    user = User.objects.get(realm=realm, username="tina")
    assert user.federation_link.name == "ldap" and not user.credentials.exists()
    assert directory.get(f"uid=tina,{PEOPLE}", "mail", "sn") == {"mail": [b"tina@example.org"], "sn": [b"Liddell"]}
    assert passwords.check_password(realm, "tina", FORM["password"]).ok  # the directory's bind


def test_certificate_hardcoded_attribute_and_hardcoded_group_mappers(realm, directory):
    from realms.models import Group

    component = make_provider(realm, directory)
    Group.objects.create(realm=realm, name="staff")
    with open(directory.ca_file) as pem:
        der = ssl.PEM_cert_to_DER_cert(pem.read())
    for name, kind, config in (
            ("cert", "certificate-ldap-mapper", {"ldap.attribute": ["userCertificate;binary"],
                                                 "user.model.attribute": ["usercertificate"],
                                                 "is.derformatted": ["true"], "read.only": ["true"]}),
            ("dept", "hardcoded-attribute-mapper", {"user.model.attribute": ["department"],
                                                     "attribute.value": ["engineering"]}),
            ("verified", "hardcoded-attribute-mapper", {"user.model.attribute": ["emailVerified"],
                                                         "attribute.value": ["true"]}),
            ("staff", "hardcoded-ldap-group-mapper", {"group": ["/staff"]})):
        Component.objects.create(realm=realm, name=name, provider_id=kind, provider_type=MAPPER,
                                 parent_id=component.pk, config=config)
    directory.add_user("uma", "uma-password", **{"userCertificate;binary": der})
    user = passwords.check_password(realm, "uma", "uma-password").user
    assert user.attributes["usercertificate"] == [base64.b64encode(der).decode()]
    assert user.attributes["department"] == ["engineering"] and user.email_verified
    assert [g.name for g in user.groups.all()] == ["staff"]


def _keycloak_ldap_component(directory):
    """An LDAP provider as Keycloak 26 exports it (keys and shapes of a real export; this test's
    directory and credentials)."""
    def mapper(name, ldap_attr, model, read_only="true", always="true", mandatory="true"):
        return {"name": name, "providerId": "user-attribute-ldap-mapper", "subComponents": {}, "config": {
            "ldap.attribute": [ldap_attr], "is.mandatory.in.ldap": [mandatory], "read.only": [read_only],
            "always.read.value.from.ldap": [always], "user.model.attribute": [model]}}

    config = {"pagination": ["false"], "fullSyncPeriod": ["-1"], "connectionPooling": ["true"], "usersDn": [PEOPLE],
              "cachePolicy": ["DEFAULT"], "useKerberosForPasswordAuthentication": ["false"],
              "importEnabled": ["true"], "enabled": ["true"], "usernameLDAPAttribute": ["uid"],
              "bindDn": [SERVICE_DN], "bindCredential": [SERVICE_PASSWORD], "changedSyncPeriod": ["-1"],
              "lastSync": ["1622010092"], "vendor": ["other"], "uuidLDAPAttribute": ["entryUUID"],
              "connectionUrl": [directory.url], "allowKerberosAuthentication": ["false"],
              "syncRegistrations": ["false"], "authType": ["simple"], "debug": ["false"], "searchScope": ["1"],
              "useTruststoreSpi": ["always"], "priority": ["0"], "trustEmail": ["false"],
              "userObjectClasses": ["inetOrgPerson, organizationalPerson"], "rdnLDAPAttribute": ["uid"],
              "editMode": ["READ_ONLY"], "validatePasswordPolicy": ["false"], "batchSizeForSync": ["0"]}
    return {"id": "f2b5c0d4-ldap-0000-0000-000000000001", "name": "ldap", "providerId": "ldap", "subComponents": {
        MAPPER: [mapper("username", "uid", "username", always="false"), mapper("last name", "sn", "lastName"),
                 mapper("email", "mail", "email", always="false", mandatory="false"),
                 mapper("modify date", "modifyTimestamp", "modifyTimestamp", mandatory="false")]},
        "config": config}


def test_a_keycloak_export_of_an_ldap_provider_imports_works_and_exports_the_same(db, directory):
    component = _keycloak_ldap_component(directory)
    realm = import_realm({"realm": "kc", "enabled": True, "components": {
        "org.keycloak.storage.UserStorageProvider": [component]}}).realm
    directory.add_user("walt", "walt-password", sn="Whitman", mail="walt@example.org")
    user = passwords.check_password(realm, "walt", "walt-password").user
    assert (user.last_name, user.email, user.federation_link_id) == ("Whitman", "walt@example.org", component["id"])
    [exported] = export_realm(realm)["components"]["org.keycloak.storage.UserStorageProvider"]
    assert {k: exported[k] for k in ("id", "name", "providerId", "config")} == \
        {k: component[k] for k in ("id", "name", "providerId", "config")}
    def shapes(mappers):
        return sorted((m["name"], m["providerId"], m["config"], m["subComponents"]) for m in mappers)

    assert shapes(exported["subComponents"][MAPPER]) == shapes(component["subComponents"][MAPPER])


def test_the_account_console_changes_a_directory_users_password_in_the_directory(client, realm, web_app, directory):
    import re

    from django.test import Client as HttpClient

    make_provider(realm, directory, editMode="WRITABLE")
    directory.add_user("dora", "dora-password")
    assert "code" in redirect_query(sign_in(client, "dora", "dora-password"))
    http = HttpClient(enforce_csrf_checks=True)
    http.cookies = client.cookies
    page_url = "/realms/acme/account/account-security/signing-in"

    def change(current, new):
        page = http.get(page_url)
        assert 'id="password"' in page.content.decode()  # the directory holds a password to give first
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode()).group(1)
        return http.post(page_url, {"csrfmiddlewaretoken": token, "password": current, "password-new": new,
                                    "password-confirm": new})

    # The current password is the directory's: a wrong one is refused, the right one accepted.
    assert change("not-dora-password", "dora-new-password").status_code == 400
    assert change("dora-password", "dora-new-password").status_code == 302
    # The new password is the directory's (a bind takes it), and no hash was kept here.
    assert passwords.check_password(realm, "dora", "dora-new-password").ok
    assert not passwords.check_password(realm, "dora", "dora-password").ok
    assert not User.objects.get(realm=realm, username="dora").credentials.exists()
    # The directory's own policy refuses a short one: shown on the page, and nothing changes.
    refused = change("dora-new-password", "x" * (MIN_PASSWORD_LENGTH - 1))
    assert refused.status_code == 400 and 'id="input-error-password"' in refused.content.decode()
    assert passwords.check_password(realm, "dora", "dora-new-password").ok


def test_an_imported_user_gets_the_realms_default_role_and_actions(realm, directory):
    from realms.models import RequiredActionProvider

    RequiredActionProvider.objects.filter(realm=realm, alias="VERIFY_EMAIL").update(default_action=True, enabled=True)
    make_provider(realm, directory)
    directory.add_user("erin", "erin-password", mail="erin@example.org")
    directory.add_user("finn", "finn-password")
    sync(Component.objects.get(realm=realm, provider_id="ldap"))
    for name in ("erin", "finn"):  # a full sync and ...
        user = User.objects.get(realm=realm, username=name)
        assert user.roles.filter(pk=realm.default_role_id).exists()
        assert "VERIFY_EMAIL" in user.required_actions
    user.roles.clear()
    user.required_actions = []
    user.save()
    sync(Component.objects.get(realm=realm, provider_id="ldap"))  # ... only on the first import
    user.refresh_from_db()
    assert not user.roles.exists() and user.required_actions == []
