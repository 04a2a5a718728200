"""One real slapd for the run (``slapd.Slapd``), emptied of people between tests, and an LDAP
provider component of realm "acme" pointing at it."""
import pytest

from realms.models import Component
from realms.services import create_realm

from .slapd import PEOPLE, SERVICE_DN, SERVICE_PASSWORD, Slapd


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
    from realms import realm_cache

    realm_cache.clear()
    realm = create_realm("acme")
    realm.events_enabled = True
    realm.save()
    return realm
