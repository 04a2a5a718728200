"""A thousand realms: the console's realm list, its header switcher and the realm filter of every
list cost a constant number of queries and show a bounded page of realms, whatever the number of
realms (Keycloak's console became unusable at 1,000: keycloak#31956)."""
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from realms.admin.switcher import SWITCHER_SIZE
from realms.models import Realm, Role, User
from realms.users.accounts import create_user
from tests.realms.test_admin_rest_api import PASSWORD, Api, master_api, token  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db

CONSOLE = "/admin/master/console/realms"


@pytest.fixture
def master():
    return Realm.objects.get_or_create(name="master")[0]


@pytest.fixture
def console(client, master):
    admin = User.objects.create(realm=master, username="root")
    admin.roles.add(Role.objects.get_or_create(realm=master, client=None, name="admin")[0])
    client.force_login(admin)
    return client


def add_realms(count, start=0):
    Realm.objects.bulk_create(Realm(name=f"r{i:04d}") for i in range(start, start + count))


def delegated_realms(count):
    """``count`` realms, each with its master client ``<realm>-realm`` of management roles, all
    held by the master realm's ``admin`` role (as a master admin holds them with every realm)."""
    from realms.administration.admin_permissions import ensure_delegated_client

    add_realms(count)
    for realm in Realm.objects.exclude(name="master"):
        ensure_delegated_client(realm)


def switcher(page):
    """The options of the header's realm switcher."""
    start = page.index('<select id="realm-switcher-select"')
    return page[start:page.index("</select>", start)].count("<option")


def queries(console, path):
    with CaptureQueriesContext(connection) as captured:
        response = console.get(path)
    assert response.status_code == 200
    return len(captured), response.content.decode()


@pytest.mark.parametrize("path", [f"{CONSOLE}/realm/", f"{CONSOLE}/client/", f"{CONSOLE}/realm/?q=r02"])
def test_console_pages_cost_the_same_with_many_realms(console, path):
    add_realms(3)
    console.get(path)  # the first view of a page loads what a process keeps
    few, _ = queries(console, path)
    add_realms(300, start=3)
    many, page = queries(console, path)
    assert many == few
    # The header's switcher offers a page of realms (master and the first by name), not 303.
    assert switcher(page) == SWITCHER_SIZE
    assert "All realms</a>" in page


def test_the_switcher_and_the_filter_offer_the_current_realm_beyond_the_first_page(console):
    add_realms(300)
    late = Realm.objects.get(name="r0299")
    _, page = queries(console, f"{CONSOLE}/client/?realm__id__exact={late.pk}")
    assert f'<option value="{late.pk}" selected>r0299</option>' in page
    assert switcher(page) == SWITCHER_SIZE + 1
    assert "r0200" not in page  # neither the switcher nor the realm filter lists every realm
    _, page = queries(console, f"{CONSOLE}/realm/?q=r0200")  # the realm list searches them all
    assert "r0200" in page


def test_a_few_realms_are_all_offered(console):
    add_realms(3)
    _, page = queries(console, f"{CONSOLE}/client/")
    assert switcher(page) == 4 and "All realms</a>" not in page


def test_the_realm_list_shows_ten_realms_a_page_and_counts_them_all(console):
    add_realms(300)
    _, page = queries(console, f"{CONSOLE}/realm/")
    assert page.count('class="field-name"') == 10 and "301 realms" in page
    _, page = queries(console, f"{CONSOLE}/realm/?p=31")  # the last page: r0299
    assert page.count('class="field-name"') == 1 and ">r0299<" in page


def test_has_realm_role_follows_groups_and_composites_within_the_users_realm(master):
    from realms.models import Client, Group, has_realm_role

    other = Realm.objects.create(name="other")
    user = User.objects.create(realm=master, username="someone")
    assert not has_realm_role(user, "admin")
    user.roles.add(Role.objects.create(realm=other, name="admin"),  # another realm's role of that name
                   Role.objects.create(realm=master, client=Client.objects.create(realm=master, client_id="app"),
                                       name="admin"))  # a client's
    assert not has_realm_role(user, "admin")
    admin = Role.objects.get_or_create(realm=master, client=None, name="admin")[0]
    composite = Role.objects.create(realm=master, name="operators")
    composite.composites.add(admin)
    group = Group.objects.create(realm=master, name="ops")
    group.roles.add(composite)
    user.groups.add(group)
    assert has_realm_role(user, "admin") and has_realm_role(user, "operators")
    user.groups.remove(group)
    assert not has_realm_role(user, "admin")
    # Up two composites and from a parent group: the walk goes up from the role, not down.
    top = Role.objects.create(realm=master, name="everything")
    top.composites.add(composite)
    parent = Group.objects.create(realm=master, name="staff")
    parent.roles.add(top)
    child = Group.objects.create(realm=master, name="night", parent=parent)
    user.groups.add(child)
    assert has_realm_role(user, "admin")
    top.composites.remove(composite)
    assert not has_realm_role(user, "admin") and has_realm_role(user, "everything")


def test_the_console_asks_whether_a_master_admin_is_one_without_building_their_roles(console, master):
    """A master admin holds every realm's management roles (19,000 rows with a thousand realms):
    the console's pages answer "master admin?" by one yes-or-no query and never build those rows
    into the process's copy of the master realm (87 MiB a worker with a thousand realms)."""
    from realms.data import realm_cache

    delegated_realms(20)
    realm_cache.clear()
    page = console.get(f"{CONSOLE}/realm/")
    assert page.status_code == 200 and "Realms" in page.content.decode()
    assert "roles-by-id" not in realm_cache._configs.get(master.pk)._extensions


def test_the_admin_api_answers_a_master_admin_without_building_their_roles(master_api, master):
    """The Admin API asks "master admin?", "may create realms?" and "may hand out this role?"
    of the role ids it reads with its caller and the master realm's cached {name: id} of its
    realm roles: it builds none of the management roles a master admin holds of every realm
    (19,000 rows with a thousand realms) into the process's copy of the master realm."""
    from realms.data import realm_cache

    delegated_realms(20)
    helper = create_user(master, "helper", password=PASSWORD)
    helper_api = Api(token("master", "helper"))  # a token of the master realm builds its roles
    realm_cache.clear()
    listed = master_api("get", "/admin/realms")
    assert listed.status_code == 200 and {"master", "r0000", "r0019"} <= {r["realm"] for r in listed.json()}
    assert master_api("get", "r0007/users").status_code == 200
    assert master_api("post", "/admin/realms", {"realm": "made", "enabled": True}).status_code == 201
    extensions = realm_cache._configs.get(master.pk)._extensions
    assert "roles-by-id" not in extensions and not extensions.get("client-roles-named")
    manage_users = Role.objects.get(realm=master, client__client_id="r0007-realm", name="manage-users")
    assert master_api("post", f"/admin/realms/master/users/{helper.pk}/role-mappings/clients/"
                              f"{manage_users.client_id}", [{"id": manage_users.pk, "name": "manage-users"}]
                      ).status_code == 204  # a master admin hands out what they hold
    # A delegated admin's roles are named from their ids: r0007's users, not r0008's.
    assert helper_api("get", "r0007/users").status_code == 200
    assert helper_api("get", "r0008/users").status_code == 403
    assert [r["realm"] for r in helper_api("get", "/admin/realms").json()] == ["r0007"]
    assert "roles-by-id" not in realm_cache._configs.get(master.pk)._extensions
