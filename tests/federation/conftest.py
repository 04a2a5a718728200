"""The federation tests' servers: one MIT Kerberos KDC per test run (``kdc``), its users, and a
``kerberos`` user storage component pointing at it."""
import os

import pytest

from realms.models import Component

from .kdc import KDC, REALM

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
