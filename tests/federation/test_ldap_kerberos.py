"""LDAP with Kerberos authentication (Keycloak's ``allowKerberosAuthentication``,
``useKerberosForPasswordAuthentication`` and ``krbPrincipalAttribute`` on an LDAP provider) against
the real slapd and MIT KDC: requests-gssapi signs a directory user in by SPNEGO, the password is
checked by the KDC instead of a bind when asked, and the provider switches the realm's SPNEGO step
on and off."""
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from requests_gssapi import OPTIONAL, HTTPSPNEGOAuth

from federation.ldap.config import LDAP_ENTRY_DN, ConfigError, LdapConfig
from realms.models import AuthenticationExecution, Component, Event, User
from realms.representation.services import create_realm
from realms.signin import passwords
from realms.signin.flows import ALTERNATIVE, DISABLED
from tests.oidc.browser.conftest import make_client

from .conftest import ALICE_PASSWORD, make_provider
from .kdc import REALM
from .slapd import PEOPLE
from .test_spnego import auth_url, base, ticket  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.django_db(transaction=True)]
DIRECTORY_PASSWORD = "alice's directory password"


def kerberos_settings(kdc, **overrides):
    return {"allowKerberosAuthentication": "true", "kerberosRealm": REALM, "serverPrincipal": kdc.service_principal,
            "keyTab": str(kdc.keytab), "useKerberosForPasswordAuthentication": "false", **overrides}


@pytest.fixture
def realm(transactional_db, base, kdc, directory):  # noqa: F811
    realm = create_realm("corp", events_enabled=True)
    make_client(realm, "web-app", redirect_uris=[f"{base}/web-app/cb"])
    return realm


def spnego_requirement(realm):
    return AuthenticationExecution.objects.get(realm=realm, flow__alias="browser",
                                               authenticator="auth-spnego").requirement


def test_requests_gssapi_signs_a_directory_user_in_by_spnego(realm, base, kdc, directory, ticket):  # noqa: F811
    assert spnego_requirement(realm) == DISABLED
    component = make_provider(realm, directory, **kerberos_settings(kdc))
    assert spnego_requirement(realm) == ALTERNATIVE  # the provider switched the step on
    directory.add_user("alice", DIRECTORY_PASSWORD, mail="alice@example.org")
    answer = requests.get(auth_url(base), auth=HTTPSPNEGOAuth(
        mutual_authentication=OPTIONAL), allow_redirects=False, timeout=10)
    assert answer.status_code == 302, answer.text
    assert parse_qs(urlsplit(answer.headers["Location"]).query)["code"]
    alice = User.objects.get(realm=realm, username="alice")
    assert alice.federation_link_id == component.pk and alice.email == "alice@example.org"
    assert alice.attributes[LDAP_ENTRY_DN] == [f"uid=alice,{PEOPLE}"]
    assert Event.objects.get(realm=realm, type="LOGIN").user_id == alice.pk
    component.config["allowKerberosAuthentication"] = ["false"]
    component.save()
    assert spnego_requirement(realm) == DISABLED  # and off again


def test_the_principal_attribute_finds_the_entry_and_the_directory_being_down_is_said(
        realm, base, kdc, directory, ticket):  # noqa: F811
    make_provider(realm, directory, **kerberos_settings(kdc, krbPrincipalAttribute="userPrincipalName"))
    # The entry's name is not the principal's: only the attribute links them.
    directory.add_user("a.liddell", DIRECTORY_PASSWORD, objectClass=[b"inetOrgPerson", b"adAccount"],
                       userPrincipalName=f"alice@{REALM}")
    directory.stop()
    answer = requests.get(auth_url(base), auth=HTTPSPNEGOAuth(mutual_authentication=OPTIONAL),
                          allow_redirects=False, timeout=10)
    assert answer.status_code == 401 and "The user directory cannot be reached." in answer.text
    directory.start()
    answer = requests.get(auth_url(base), auth=HTTPSPNEGOAuth(mutual_authentication=OPTIONAL),
                          allow_redirects=False, timeout=10)
    assert answer.status_code == 302, answer.text
    user = User.objects.get(realm=realm, username="a.liddell")
    assert user.attributes["KERBEROS_PRINCIPAL"] == [f"alice@{REALM}"]


@pytest.mark.parametrize("by_kdc", [True, False])
def test_use_kerberos_for_password_authentication(realm, kdc, directory, by_kdc):
    make_provider(realm, directory, **kerberos_settings(kdc, useKerberosForPasswordAuthentication=str(by_kdc).lower()))
    directory.add_user("alice", DIRECTORY_PASSWORD)
    assert passwords.check_password(realm, "alice", ALICE_PASSWORD).ok is by_kdc
    assert passwords.check_password(realm, "alice", DIRECTORY_PASSWORD).ok is not by_kdc


def test_kerberos_authentication_needs_its_settings(realm, kdc, directory):
    component = Component(realm=realm, provider_id="ldap", provider_type=Component.USER_STORAGE,
                          config={k: [v] for k, v in {"editMode": "READ_ONLY", "connectionUrl": directory.url,
                                                      **kerberos_settings(kdc, keyTab="")}.items()})
    with pytest.raises(ConfigError, match=r"KeyTab is required \(keyTab\)"):
        LdapConfig.of(component)


def test_without_python_gssapi_the_provider_says_so_and_refuses_nothing_silently(realm, kdc, directory, monkeypatch,
                                                                                  caplog):
    import sys

    import federation.kerberos
    from realms.users import storage

    component = make_provider(realm, directory, **kerberos_settings(kdc, useKerberosForPasswordAuthentication="true"))
    directory.add_user("alice", DIRECTORY_PASSWORD)
    for name in ("gss", "provider"):  # as on a server without the extra: importing them fails
        monkeypatch.setitem(sys.modules, f"federation.kerberos.{name}", None)
        monkeypatch.delattr(federation.kerberos, name)
    assert passwords.check_password(realm, "alice", ALICE_PASSWORD).error == passwords.USER_STORAGE_UNAVAILABLE
    assert storage.provider_for(component).authenticate_credential(realm, storage.KERBEROS, "token") is None
    assert "Kerberos is not available on this server" in caplog.text
