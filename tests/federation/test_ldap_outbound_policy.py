"""An LDAP provider's connection URLs go through the outbound address policy
(``realms.http.outbound.check_host``, decision 0118) before python-ldap opens them: every address of
every host of the space-separated URLs must be public or inside ``IDP_OUTBOUND_ALLOWED_NETWORKS``.
Against the real slapd on loopback: refused under production's defaults (the Admin API's
testLDAPConnection in Keycloak's error shape, a sign-in by bind), bound when allowed."""
import ldap
import pytest

from federation.ldap import connection as ldap_connection
from federation.ldap.config import LdapConfig
from federation.ldap.connection import AddressRefused, DirectoryUnavailable, check_addresses, connect
from federation.ldap.sync import sync
from realms.http import outbound
from realms.models import Component
from realms.signin import passwords
from realms.users.accounts import create_user

from .conftest import make_provider
from .slapd import SERVICE_DN, SERVICE_PASSWORD
from .test_console import _action, _added, _page, console

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_caches")]
REFUSED = "LDAP server refused by the outbound policy: 127.0.0.1 resolves to a non-public address"


def _body(url, action="testConnection"):
    return {"connectionUrl": url, "bindDn": SERVICE_DN, "bindCredential": SERVICE_PASSWORD, "authType": "simple",
            "action": action}


def test_test_ldap_connection_refuses_a_loopback_directory_under_production_defaults(realm, directory, admin_api,
                                                                                     settings, monkeypatch):
    initialized = []
    real = ldap.initialize
    monkeypatch.setattr(ldap_connection.ldap, "initialize", lambda *a, **kw: initialized.append(a) or real(*a, **kw))
    settings.IDP_OUTBOUND_ALLOWED_NETWORKS = []  # production
    for url in (directory.url, directory.ldaps_url):
        for action in ("testConnection", "testAuthentication"):
            resp = admin_api("post", "acme/testLDAPConnection", _body(url, action))
            assert resp.status_code == 400
            assert resp.json() == {"errorMessage": f"LDAP test error: {REFUSED}"}
    assert initialized == []  # python-ldap never saw the URL
    # Allowed by configuration: the same tests connect and bind.
    settings.IDP_OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    for url in (directory.url, directory.ldaps_url):
        for action in ("testConnection", "testAuthentication"):
            assert admin_api("post", "acme/testLDAPConnection", _body(url, action)).status_code == 204


def test_every_address_of_every_url_is_checked(settings, monkeypatch):
    settings.IDP_OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    monkeypatch.setattr(outbound, "resolve", lambda host, port: {
        "dir1.acme.test": ["127.0.0.1"], "dir2.acme.test": ["127.0.0.2", "10.0.0.9"],
        "meta.acme.test": ["169.254.169.254"]}.get(host, [host]))
    check_addresses("ldap://dir1.acme.test ldaps://dir1.acme.test:1636")
    for urls in ("ldap://dir1.acme.test ldap://dir2.acme.test", "ldaps://meta.acme.test:636/",
                 "ldap://dir1.acme.test  ldap://10.1.2.3:389"):
        with pytest.raises(AddressRefused, match="outbound policy"):
            check_addresses(urls)
    assert issubclass(AddressRefused, DirectoryUnavailable)  # every caller's "directory unavailable"


def test_a_refused_directory_is_unavailable_to_sign_in_and_bound_when_allowed(realm, directory, settings):
    component = make_provider(realm, directory)
    directory.add_user("nina", "nina-password")
    sync(component)  # imported while allowed (the fixture's loopback exception)
    create_user(realm, "local", password="local-password-1")
    settings.IDP_OUTBOUND_ALLOWED_NETWORKS = []
    with pytest.raises(AddressRefused, match="non-public"):
        connect(LdapConfig.of(Component.objects.get(pk=component.pk), SERVICE_PASSWORD))
    assert passwords.check_password(realm, "nina", "nina-password").error == passwords.USER_STORAGE_UNAVAILABLE
    assert passwords.check_password(realm, "local", "local-password-1").ok
    # The allowed path: a real bind on slapd.
    settings.IDP_OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    conn = connect(LdapConfig.of(Component.objects.get(pk=component.pk), SERVICE_PASSWORD))
    assert conn.whoami_s() == f"dn:{SERVICE_DN}"
    conn.unbind_s()
    assert passwords.check_password(realm, "nina", "nina-password").ok


def test_the_consoles_test_buttons_name_the_refusal(console, realm, directory, settings):
    component = _added(console, realm, directory)
    settings.IDP_OUTBOUND_ALLOWED_NETWORKS = []
    for action, doing in (("test-connection", "connect to"), ("test-authentication", "authenticate to")):
        page = _page(_action(console, component, action))
        assert f"Error when trying to {doing} LDAP: {REFUSED}" in page
    settings.IDP_OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    assert "Successfully connected to LDAP." in _page(_action(console, component, "test-connection"))
