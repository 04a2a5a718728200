"""The console's realm list as the master admin (issue 36: a thousand realms within 10 % of one):
its statements, held exactly, are the same with one realm as with eleven (a full page of ten rows),
so that neither the realm count nor the rows shown add a statement."""
import pytest

from realms.administration import console_auth
from realms.models import Realm
from tests.conftest import assert_costs
from tests.realms.test_admin import console, master  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db
PAGE = "/admin/master/console/realms/realm/"
MANAGE = '<a href="/admin/master/console/realms/client/?realm__id__exact='  # a row's "Manage this realm"
# The session; the user with their realm; their credentials (the session's password check, then
# "has a password" for the header's link); "master admin?" once (the console's access and the
# user's is_superuser share the answer); the realm count (the paginator's; no second "N total"
# count); the page of realms; the header's switcher.
STATEMENTS = 7


@pytest.mark.parametrize("realms", [1, 11])
def test_the_realm_list_costs_the_same_statements_whatever_the_rows(console, measure, fresh_caches, realms):
    Realm.objects.bulk_create(Realm(name=f"r{i:04d}") for i in range(realms - 1))
    assert console.get(PAGE).status_code == 200  # warm: the session's realm, the realm cache
    with measure() as cost:
        response = console.get(PAGE)
    assert response.status_code == 200
    assert response.content.decode().count(MANAGE) == min(realms, 10)
    assert_costs({"list": cost}, {"list": (STATEMENTS, 0)})


def test_console_access_is_decided_once_a_page(console, monkeypatch):
    """Django's admin asks ``has_permission`` for the page and for each model of its menu."""
    asked = []
    session_alive = console_auth.session_alive
    monkeypatch.setattr(console_auth, "session_alive", lambda request: asked.append(1) or session_alive(request))
    assert console.get(PAGE).status_code == 200
    assert len(asked) == 1
