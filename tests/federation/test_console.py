"""LDAP and Kerberos providers on the console, against the real slapd and KDC: every honoured
setting on the page in its fieldset, the bind credential write-only, refusals in Keycloak's English
text (never a raw message key), the actions as forms of their own after the settings form (the
first button of the settings form is Save, so Enter saves), tests of the connection and the bind
as messages, a synchronization run in the background with its status on the page, the mappers
added, changed and deleted from the provider's page, and Kerberos providers' page."""
import re
import time

import pytest

from federation.models import KerberosComponent, LdapComponent, LdapMapper, SyncStatus
from realms.models import AuthenticationExecution, Component, Event, Group, Realm, User
from realms.users.storage import open_config
from tests.realms.test_admin import errors_of, make_admin, read_form

from .conftest import ldap_config
from .slapd import GROUPS, SERVICE_PASSWORD

pytestmark = [pytest.mark.usefixtures("fresh_caches")]
BASE = "/admin/master/console/federation/ldapcomponent/"
MAPPERS = "/admin/master/console/federation/ldapmapper/"
KERBEROS = "/admin/master/console/federation/kerberoscomponent/"
MAPPER = "org.keycloak.storage.ldap.mappers.LDAPStorageMapper"


@pytest.fixture
def console(client, realm):
    realm.admin_events_enabled = True
    realm.save()
    client.force_login(make_admin(Realm.objects.get(name="master")))
    client.get(f"{BASE}?realm__id__exact={realm.pk}")  # the current realm
    return client


def _form(directory, **changes):
    data = {k: v[0] for k, v in ldap_config(directory).items() if v[0] != "false"}
    data.update({"name": "corp", "priority": "0"}, **changes)
    return {k: v for k, v in data.items() if v is not None}


def _page(response):
    text = response.content.decode()
    assert response.status_code == 200, response.status_code
    assert "${" not in text and not re.search(r"\bldapError\w+", text), "a raw message key on the page"
    return text


def _added(console, realm, directory, **changes):
    response = console.post(f"{BASE}add/", _form(directory, realm=realm.pk, **changes))
    assert response.status_code == 302, errors_of(response)
    return LdapComponent.objects.get(realm=realm, name="corp")


def _action(console, component, action):
    return console.post(f"{BASE}{component.pk}/action/{action}/", follow=True)


@pytest.mark.django_db
def test_the_page_shows_every_honoured_setting_in_its_fieldset_and_save_comes_first(console, realm):
    page = _page(console.get(f"{BASE}add/"))
    for title in ("General options", "Connection and authentication settings", "LDAP searching and updating",
                  "Synchronization settings", "Kerberos integration", "Cache settings", "Advanced settings"):
        assert f">{title}<" in page, title
    fields = read_form(page, "ldapcomponent_form")
    for key in ("vendor", "connectionUrl", "authType", "bindDn", "usersDn", "usernameLDAPAttribute",
                "rdnLDAPAttribute", "uuidLDAPAttribute", "userObjectClasses", "searchScope", "editMode",
                "batchSizeForSync", "fullSyncPeriod", "changedSyncPeriod", "cachePolicy"):
        assert key in fields, key
    for key in ("bindCredential", "customUserSearchFilter", "connectionTimeout", "kerberosRealm", "keyTab"):
        assert f'name="{key}"' in page, key
    # Dropdowns where Keycloak has them; no edit mode chosen for the admin.
    for key in ("vendor", "authType", "editMode", "searchScope", "cachePolicy", "evictionDay"):
        assert re.search(rf'<select name="{key}"', page), key
    assert fields["editMode"] == [""]
    # Settings Keycloak has and this server does not honour are not offered.
    for key in ("connectionTrace", "useTruststoreSpi", "referral"):
        assert f'name="{key}"' not in page
    # Enter in a field submits the form's first submit button: Save, and no action is inside the form.
    form = re.search(r'<form[^>]*id="ldapcomponent_form".*?</form>', page, re.S).group(0)
    assert re.search(r'<(?:input|button)[^>]*type="submit"[^>]*>', form).group(0).count('name="_save"') == 1
    assert "formaction" not in form


@pytest.mark.django_db
def test_console_adds_an_ldap_provider_with_its_mappers_and_a_write_only_bind_credential(console, realm, directory):
    component = _added(console, realm, directory)
    assert SERVICE_PASSWORD not in str(component.config)
    assert open_config(component)["bindCredential"] == [SERVICE_PASSWORD]
    assert LdapMapper.objects.filter(parent_id=component.pk).count() == 6
    url = f"{BASE}{component.pk}/change/"
    page = _page(console.get(url))
    assert SERVICE_PASSWORD not in page and "A value is set" in page
    assert page.count('href="/admin/master/console/federation/ldapmapper/') >= 6  # the Mappers tab
    fields = read_form(page, "ldapcomponent_form")
    fields.update(editMode=["READ_ONLY"], bindCredential=[""])
    assert console.post(url, fields).status_code == 302
    component = LdapComponent.objects.get(pk=component.pk)
    assert component.get("editMode") == "READ_ONLY"
    assert open_config(component)["bindCredential"] == [SERVICE_PASSWORD]  # kept when left empty
    paths = set(Event.objects.filter(realm=realm, kind=Event.ADMIN).values_list("resource_path", flat=True))
    assert f"components/{component.pk}" in paths


@pytest.mark.django_db
@pytest.mark.parametrize("changes, text", [
    ({"editMode": ""}, "Edit Mode is mandatory"),
    ({"startTls": "on", "connectionPooling": "on"}, "Can not enable both StartTLS and connection pooling."),
    ({"editMode": "UNSYNCED", "importEnabled": None}, "Can not disable Importing users when LDAP provider mode is "
                                                      "UNSYNCED"),
    ({"customUserSearchFilter": "uid=x"}, 'Custom configured LDAP filter does not start with "(" or does not end '
                                          'with ")".'),
    ({"connectionTimeout": "soon"}, "Connection Timeout must be a number"),
    ({"connectionUrl": "http://127.0.0.1:389"}, "connectionUrl must be ldap:// or ldaps:// URLs"),
    ({"allowKerberosAuthentication": "on", "kerberosRealm": "EXAMPLE.ORG"}, "Server principal is required"),
])
def test_console_refuses_a_configuration_in_english_and_stores_nothing(console, realm, directory, changes, text):
    response = console.post(f"{BASE}add/", _form(directory, realm=realm.pk, **changes))
    page = _page(response)
    assert text.replace('"', "&quot;") in page
    assert not LdapComponent.objects.filter(realm=realm).exists()


@pytest.mark.django_db
def test_testing_the_connection_and_the_bind_answers_messages(console, realm, directory):
    component = _added(console, realm, directory)
    assert "Successfully connected to LDAP." in _page(_action(console, component, "test-connection"))
    page = _page(_action(console, component, "test-authentication"))
    assert "Successfully authenticated to LDAP as cn=idp,dc=example,dc=org." in page
    component.config["bindCredential"] = ["wrong-password"]
    component.save()
    page = _page(_action(console, component, "test-authentication"))
    assert "Error when trying to authenticate to LDAP: Invalid credentials" in page
    component.config["connectionUrl"] = ["ldap://127.0.0.1:9"]  # nothing listens there
    component.save()
    page = _page(_action(console, component, "test-connection"))
    assert "Error when trying to connect to LDAP: Can&#x27;t contact LDAP server" in page
    assert console.get(f"{BASE}{component.pk}/action/test-connection/").status_code == 405
    assert console.post(f"{BASE}{component.pk}/action/drop-everything/").status_code == 404


def _sync_state(console, component, state, timeout=30):
    deadline = time.monotonic() + timeout
    while True:
        page = _page(console.get(f"{BASE}{component.pk}/change/"))
        found = re.search(r'<span id="sync-status" data-state="(\w+)">(.*?)</span>', page, re.S)
        assert found, page[page.find("Synchronization settings"):][:1500]
        if found.group(1) == state or time.monotonic() > deadline:
            return found.group(1), found.group(2)
        time.sleep(0.2)


def test_a_sync_runs_in_the_background_and_the_page_shows_its_status(console, realm, directory, settings,
                                                                     transactional_db):
    settings.IDP_JOBS_IN_PROCESS = True  # dev mode's runner: a thread of the server
    component = _added(console, realm, directory)
    assert _sync_state(console, component, "none", timeout=0) == ("none", "Not synchronized yet.")
    directory.add_user("olga", "olga-password")
    directory.add_user("pavel", "pavel-password")
    page = _page(_action(console, component, "sync-all"))
    assert "Synchronize all users: started." in page
    state, text = _sync_state(console, component, "done")
    assert state == "done" and text.startswith("All users: done at ") and text.endswith(
        ": 2 imported users, 0 updated users."), text
    assert not re.search(r"\b1[0-9]{9}\b", text)  # a time people read, never epoch seconds
    assert User.objects.filter(realm=realm, federation_link=component).count() == 2
    assert Event.objects.filter(realm=realm, kind=Event.ADMIN, resource_path=f"components/{component.pk}/sync",
                                type="ACTION").exists()
    directory.add_user("rita", "rita-password")
    _page(_action(console, component, "sync-changed"))
    state, text = _sync_state(console, component, "done")
    assert text.startswith("Changed users: done at ") and "1 imported users" in text, text
    # One at a time: a sync still marked running refuses another.
    SyncStatus.objects.filter(component=component).update(state=SyncStatus.RUNNING)
    assert "already under way" in _page(_action(console, component, "sync-all"))


def test_a_sync_that_cannot_bind_ends_failed_with_the_reason(console, realm, directory, settings,
                                                                       transactional_db):
    settings.IDP_JOBS_IN_PROCESS = True
    component = _added(console, realm, directory, connectionUrl="ldap://127.0.0.1:9")
    _page(_action(console, component, "sync-all"))
    state, text = _sync_state(console, component, "failed")
    assert state == "failed" and "The directory could not be reached: Can&#x27;t contact LDAP server" in text, text
    # A bind the directory refuses (Keycloak answered a server error page): the reason, in words.
    component.config.update(connectionUrl=[directory.url], bindCredential=["not-the-password"])
    component.save()
    _page(_action(console, component, "sync-all"))
    state, text = _sync_state(console, component, "failed")
    assert state == "failed" and text.endswith("The directory refused: Invalid credentials"), text


@pytest.mark.django_db
def test_mappers_are_added_changed_and_deleted_from_the_providers_page(console, realm, directory):
    component = _added(console, realm, directory)
    email = LdapMapper.objects.get(parent_id=component.pk, name="email")
    url = f"{MAPPERS}{email.pk}/change/"
    page = _page(console.get(url))
    fields = read_form(page, "ldapmapper_form")
    assert fields["ldap.attribute"] == ["mail"] and fields["user.model.attribute"] == ["email"]
    assert 'name="always.read.value.from.ldap"' not in page  # stored by Keycloak's defaults, not honoured here
    fields["ldap.attribute"] = ["otherMailbox"]
    response = console.post(url, fields)
    assert response.status_code == 302 and response["Location"].endswith(f"/{component.pk}/change/#mappers")
    email.refresh_from_db()
    assert email.config["ldap.attribute"] == ["otherMailbox"]
    assert email.config["always.read.value.from.ldap"] == ["false"]  # kept as it was

    add = f"{MAPPERS}add/?parent={component.pk}&provider_id=group-ldap-mapper"
    page = _page(console.get(add))
    data = read_form(page, "ldapmapper_form")
    data.update({"name": "groups", "mode": ["LDAP_ONLY"], "groups.dn": [""]})
    assert "This field is required." in _page(console.post(add, data))
    data.update({"groups.dn": [GROUPS], "membership.attribute.type": ["UID"], "preserve.group.inheritance": ["on"]})
    page = _page(console.post(add, data))
    assert "Not possible to preserve group inheritance and use UID membership type together." in page
    data.pop("preserve.group.inheritance")
    response = console.post(add, data)
    assert response.status_code == 302, errors_of(response)
    groups = LdapMapper.objects.get(parent_id=component.pk, name="groups")
    assert groups.realm_id == realm.pk and groups.provider_id == "group-ldap-mapper"
    assert groups.config["groups.dn"] == [GROUPS] and groups.config["preserve.group.inheritance"] == ["false"]
    assert console.get(f"{MAPPERS}add/?parent={component.pk}&provider_id=no-such-mapper").status_code == 404
    assert console.get(f"{MAPPERS}add/").status_code == 403  # only from a provider's Mappers tab

    directory.add_group("ops", ["cn=empty-membership-placeholder"])
    page = _page(console.get(f"{MAPPERS}{groups.pk}/change/"))
    sync = re.search(r'<form method="post" action="([^"]+)">.*?Sync LDAP groups to Keycloak', page, re.S).group(1)
    page = _page(console.post(sync, follow=True))
    assert "1 imported groups, 0 updated groups" in page, re.findall(r'<li class="[a-z]+">.*?</li>', page)
    assert Group.objects.filter(realm=realm, name="ops").exists()

    response = console.post(f"{MAPPERS}{email.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302 and response["Location"].endswith(f"/{component.pk}/change/#mappers")
    assert not Component.objects.filter(pk=email.pk).exists()


@pytest.mark.django_db
def test_console_adds_a_kerberos_provider_and_checks_it(console, realm, kdc):
    from .kdc import REALM

    page = _page(console.get(f"{KERBEROS}add/"))
    for key in ("kerberosRealm", "serverPrincipal", "keyTab", "debug", "allowPasswordAuthentication", "editMode",
                "updateProfileFirstLogin"):
        assert f'name="{key}"' in page, key
    data = {"name": "corp-kerberos", "kerberosRealm": REALM, "serverPrincipal": kdc.service_principal,
            "keyTab": "", "editMode": "READ_ONLY", "allowPasswordAuthentication": "on", "priority": "0",
            "enabled": "on"}
    page = _page(console.post(f"{KERBEROS}add/", data))
    assert "This field is required." in page and not KerberosComponent.objects.exists()
    data["keyTab"] = str(kdc.keytab)
    response = console.post(f"{KERBEROS}add/", data)
    assert response.status_code == 302, errors_of(response)
    component = KerberosComponent.objects.get(realm=realm)
    assert component.config["allowPasswordAuthentication"] == ["true"]
    assert component.config["updateProfileFirstLogin"] == ["false"] and component.parent_id == realm.pk
    # A provider taking tickets switches the realm's SPNEGO step on, as the Admin API's does.
    assert AuthenticationExecution.objects.get(realm=realm, authenticator="auth-spnego").requirement == "ALTERNATIVE"
    url = f"{KERBEROS}{component.pk}/change/"
    fields = read_form(_page(console.get(url)), "kerberoscomponent_form")
    fields["updateProfileFirstLogin"] = ["on"]
    assert console.post(url, fields).status_code == 302
    assert KerberosComponent.objects.get(pk=component.pk).config["updateProfileFirstLogin"] == ["true"]


@pytest.mark.django_db
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


@pytest.mark.django_db
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


@pytest.mark.django_db
def test_a_scheduled_sync_is_shown_on_the_providers_page_too(console, realm, directory):
    from federation.tasks import ldap_sync

    from .conftest import make_provider

    component = make_provider(realm, directory)
    directory.add_user("olga", "olga-password")
    ldap_sync(component.pk, True)  # what the beat's entry runs on a worker
    state, text = _sync_state(console, component, "done", timeout=0)
    assert state == "done" and text.startswith("Changed users: done at ") and "1 imported users" in text, text
