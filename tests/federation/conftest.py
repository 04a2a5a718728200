"""The federation tests' servers, each started once per test run: an MIT Kerberos KDC (``kdc``)
with its users and a ``kerberos`` component pointing at it; a real slapd (``slapd.Slapd``), emptied
of people between tests, and an LDAP provider component of realm "acme" pointing at it."""
import os

import pytest

from realms.models import Component
from realms.representation.services import create_realm

from .kdc import KDC, REALM
from .slapd import PEOPLE, SERVICE_DN, SERVICE_PASSWORD, Slapd

ALICE_PASSWORD = "alice's kerberos password"


@pytest.fixture(scope="session")
def kdc(tmp_path_factory):
    server = KDC(tmp_path_factory.mktemp("kdc")).start()
    server.add_user("alice", ALICE_PASSWORD)
    server.add_user("bob", "bob's kerberos password")
    # The provider and the test clients find the KDC through KRB5_CONFIG, as a server finds its
    # realm through /etc/krb5.conf.
    saved = os.environ.get("KRB5_CONFIG")
    os.environ["KRB5_CONFIG"] = str(server.krb5_conf)
    yield server
    if saved is None:
        os.environ.pop("KRB5_CONFIG", None)
    else:
        os.environ["KRB5_CONFIG"] = saved
    server.stop()


@pytest.fixture(autouse=True)
def _fresh_cache(fresh_caches):
    pass


def kerberos_config(kdc, **overrides):
    config = {"kerberosRealm": REALM, "serverPrincipal": kdc.service_principal, "keyTab": str(kdc.keytab),
              "allowPasswordAuthentication": "true", "updateProfileFirstLogin": "false", "editMode": "READ_ONLY",
              "debug": "false", "priority": "0", "enabled": "true", **overrides}
    return {name: [value] for name, value in config.items()}


def add_kerberos_component(realm, kdc, **overrides):
    return Component.objects.create(realm=realm, name="kerberos", provider_id="kerberos",
                                    provider_type=Component.USER_STORAGE, parent_id=realm.pk,
                                    config=kerberos_config(kdc, **overrides))


@pytest.fixture(scope="session")
def slapd(tmp_path_factory):
    server = Slapd(tmp_path_factory.mktemp("slapd"))
    yield server
    server.stop()


@pytest.fixture
def directory(slapd, settings):
    if slapd.proc is None or slapd.proc.poll() is not None:
        slapd.start()  # a test stopped it
    settings.IDP_OUTBOUND_CA_BUNDLE = slapd.ca_file
    settings.IDP_OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]  # slapd is on loopback (decision 0118)
    slapd.delete_people()
    yield slapd
    if slapd.proc is None:
        slapd.start()


def ldap_config(slapd, **overrides):
    config = {"vendor": "other", "connectionUrl": slapd.url, "authType": "simple", "bindDn": SERVICE_DN,
              "bindCredential": SERVICE_PASSWORD,
              "usersDn": PEOPLE, "usernameLDAPAttribute": "uid", "rdnLDAPAttribute": "uid",
              "uuidLDAPAttribute": "entryUUID", "userObjectClasses": "inetOrgPerson, organizationalPerson",
              "searchScope": "1", "editMode": "WRITABLE", "importEnabled": "true", "pagination": "true",
              "batchSizeForSync": "100", "connectionPooling": "true", "fullSyncPeriod": "-1",
              "changedSyncPeriod": "-1", "cachePolicy": "DEFAULT", "enabled": "true"}
    config.update(overrides)
    return {k: [v] for k, v in config.items()}


def make_provider(realm, slapd, mappers=True, **overrides):
    from federation.ldap.api import add_default_mappers

    component = Component.objects.create(realm=realm, name="ldap", provider_id="ldap",
                                         provider_type=Component.USER_STORAGE, parent_id=realm.pk,
                                         config=ldap_config(slapd, **overrides))
    if mappers:
        add_default_mappers(component)
    return component


@pytest.fixture
def realm(db):
    from realms.data import realm_cache

    realm_cache.clear()
    realm = create_realm("acme")
    realm.events_enabled = True
    realm.save()
    return realm


@pytest.fixture
def web_app(realm):
    from tests.oidc.browser.conftest import make_client

    return make_client(realm, "web-app", redirect_uris=["https://app.example/cb"], direct_access_grants_enabled=True)


@pytest.fixture
def admin_api(realm):
    from realms.models import Role
    from realms.users.accounts import create_user
    from tests.realms.test_admin_rest_api import PASSWORD, Api, token

    user = create_user(realm, "realm-admin", password=PASSWORD)
    user.roles.add(*Role.objects.filter(realm=realm, client__client_id="realm-management",
                                        name__in=["manage-realm", "view-realm", "manage-users", "view-users"]))
    return Api(token(realm.name, "realm-admin"))
