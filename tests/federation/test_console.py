"""LDAP providers on the console: added with Keycloak's default mappers and the bind credential
encrypted, kept when the field is left empty, and the actions "Test connection", "Test
authentication", "Synchronize all users" and the group mappers' two syncs against the real slapd, each
recorded as an admin event."""
import pytest

from federation.models import LdapComponent
from realms.models import Component, Event, Realm, User
from realms.users.storage import open_config
from tests.realms.test_admin import make_admin

from .conftest import ldap_config
from .slapd import SERVICE_PASSWORD

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_caches")]
BASE = "/admin/master/console/federation/ldapcomponent/"
MAPPER = "org.keycloak.storage.ldap.mappers.LDAPStorageMapper"


@pytest.fixture
def console(client, realm):
    realm.admin_events_enabled = True
    realm.save()
    client.force_login(make_admin(Realm.objects.get(name="master")))
    client.get(f"{BASE}?realm__id__exact={realm.pk}")  # the current realm
    return client


def _form(directory, **changes):
    config = {k: v[0] for k, v in ldap_config(directory).items()}
    data = {k: v for k, v in config.items() if v not in ("false",)}
    data.update({"name": "corp", "batchSizeForSync": "100", "priority": "0", "maxLifespan": ""}, **changes)
    return {k: v for k, v in data.items() if v is not None}


def test_console_adds_tests_and_syncs_an_ldap_provider(console, realm, directory):
    response = console.post(f"{BASE}add/", _form(directory, realm=realm.pk))
    assert response.status_code == 302, response.context["adminform"].form.errors
    component = LdapComponent.objects.get(realm=realm, name="corp")
    assert SERVICE_PASSWORD not in str(component.config)
    assert open_config(component)["bindCredential"] == [SERVICE_PASSWORD]
    assert Component.objects.filter(parent_id=component.pk, provider_type=MAPPER).count() == 6

    page = console.get(f"{BASE}{component.pk}/change/").content.decode()
    assert SERVICE_PASSWORD not in page  # write-only
    response = console.post(f"{BASE}{component.pk}/change/", _form(directory, bindCredential="", realm=realm.pk))
    assert response.status_code == 302
    assert open_config(LdapComponent.objects.get(pk=component.pk))["bindCredential"] == [SERVICE_PASSWORD]

    directory.add_user("olga", "olga-password")
    for action, text in (("test_connection", "connection succeeded"),
                         ("test_authentication", "authentication succeeded"),
                         ("sync_all_users", "1 imported users, 0 updated users")):
        page = console.post(BASE, {"action": action, "_selected_action": [component.pk]}, follow=True)
        assert text in page.content.decode()
    assert User.objects.filter(realm=realm, username="olga", federation_link=component).exists()
    paths = set(Event.objects.filter(realm=realm, kind=Event.ADMIN).values_list("resource_path", flat=True))
    assert {f"components/{component.pk}", f"components/{component.pk}/sync"} <= paths


def test_console_refuses_a_configuration_that_cannot_work(console, realm, directory):
    response = console.post(f"{BASE}add/", _form(directory, realm=realm.pk, startTls="on", connectionPooling="on"))
    assert response.status_code == 200
    assert "ldapErrorCantEnableStartTlsAndConnectionPooling" in response.content.decode()
    assert not LdapComponent.objects.filter(realm=realm).exists()


def test_console_syncs_a_providers_group_mappers(console, realm, directory):
    from realms.models import Group

    from .conftest import make_provider
    from .slapd import GROUPS

    component = make_provider(realm, directory)
    Component.objects.create(realm=realm, name="groups", provider_id="group-ldap-mapper", provider_type=MAPPER,
                             parent_id=component.pk, config={"groups.dn": [GROUPS], "mode": ["LDAP_ONLY"]})
    directory.add_group("ops", ["cn=empty-membership-placeholder"])
    Group.objects.create(realm=realm, name="sales")
    for action, text in (("sync_groups_to_keycloak", "/ groups: 1 imported groups, 0 updated groups"),
                         ("sync_groups_to_ldap", "/ groups: 1 groups imported to LDAP, 1 groups updated")):
        page = console.post(BASE, {"action": action, "_selected_action": [component.pk]}, follow=True)
        assert text in page.content.decode()
    assert Group.objects.filter(realm=realm, name="ops").exists()
    assert directory.get(f"cn=sales,{GROUPS}", "cn")["cn"] == [b"sales"]


def test_console_shows_a_directory_refusal_and_keeps_everything(console, realm, directory, admin_api):
    """A READ_ONLY provider and group mapper refuse, as the Admin API does, a change the user's
    form would make: the page says why (no server error) and nothing of the form is saved."""
    from realms.models import Group
    from tests.realms.test_admin import submit

    from .conftest import make_provider
    from .test_ldap_groups import add_mapper, signed_in

    component = make_provider(realm, directory, editMode="READ_ONLY")
    assert add_mapper(admin_api, component, mode="READ_ONLY", **{"preserve.group.inheritance": "false"}
                      ).status_code == 201
    directory.add_group("ops", [directory.add_user("kim", "kim-password")])
    user = signed_in(realm, "kim")
    assert [g.name for g in user.groups.all()] == ["ops"]
    url = f"/admin/master/console/realms/user/{user.pk}/change/"
    local = Group.objects.create(realm=realm, name="local")
    response = submit(console, url, "user_form", {"groups": [local.pk]})  # leaves "ops", joins "local"
    assert response.status_code == 200 and response.redirect_chain[-1][0] == url
    assert "Not possible to delete LDAP group mappings as mapper mode is READ_ONLY" in response.content.decode()
    assert [g.name for g in user.groups.all()] == ["ops"]  # "local" not joined either
    response = submit(console, url, "user_form", {"first_name": "Kimberly"})
    assert "User is read only!" in response.content.decode()
    user.refresh_from_db()
    assert user.first_name != "Kimberly"


def test_console_keeps_the_cache_and_kerberos_settings_and_checks_them(console, realm, directory, kdc):
    from .kdc import REALM

    kerberos = {"allowKerberosAuthentication": "on", "kerberosRealm": REALM, "serverPrincipal": kdc.service_principal,
                "keyTab": "", "useKerberosForPasswordAuthentication": "on"}
    weekly = {"cachePolicy": "EVICT_WEEKLY", "evictionDay": "5", "evictionHour": "3", "evictionMinute": "30"}
    response = console.post(f"{BASE}add/", _form(directory, realm=realm.pk, **kerberos, **weekly))
    assert response.status_code == 200 and "KeyTab is required (keyTab)" in response.content.decode()
    response = console.post(f"{BASE}add/", _form(directory, realm=realm.pk, **weekly,
                                                  **{**kerberos, "keyTab": str(kdc.keytab)}))
    assert response.status_code == 302, response.context["adminform"].form.errors
    config = LdapComponent.objects.get(realm=realm, name="corp").config
    assert {k: config[k] for k in ("allowKerberosAuthentication", "keyTab", "evictionDay", "evictionMinute")} == {
        "allowKerberosAuthentication": ["true"], "keyTab": [str(kdc.keytab)], "evictionDay": ["5"],
        "evictionMinute": ["30"]}
