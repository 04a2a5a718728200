"""The console's realm list writes its rows once a page (``RealmAdmin.result_rows``, decision 0107):
the same HTML as Django's rendering of its ``list_display``, and no per-row work (no statement,
permission check or Django row writer) whatever the number of rows shown."""
import pytest
from django.contrib import admin
from django.contrib.admin.templatetags import admin_list
from django.urls import reverse

from realms.admin import base
from realms.models import Realm
from tests.realms.test_admin import console, master  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db
PAGE = "/admin/master/console/realms/realm/"


def page_and_changelist(console, monkeypatch, query=None):
    """The realm list's HTML and the ChangeList its rows were written from."""
    realm_admin = admin.site._registry[Realm]
    made, real = [], realm_admin.get_changelist_instance
    monkeypatch.setattr(realm_admin, "get_changelist_instance", lambda request: made.append(real(request)) or made[-1])
    response = console.get(PAGE, query or {})
    assert response.status_code == 200
    return response.content.decode(), made[-1]


@pytest.fixture
def realms(master):
    return [master,
            Realm.objects.create(name="r<&>\"'x", display_name='<b>Tom & "Jerry"</b>', enabled=False),
            Realm.objects.create(name="r-blank", display_name="   "),
            Realm.objects.create(name="r-plain", display_name="Plain")]


# Plain; searched (each change link carries the list's filters back); sorted by display name,
# descending; as a picker's popup (no checkbox, a data-popup-opener on each link).
@pytest.mark.parametrize("query", [{}, {"q": "r-"}, {"o": "-2"}, {"_popup": "1"}])
def test_the_rows_are_djangos_rendering_of_list_display(console, monkeypatch, realms, query):
    page, cl = page_and_changelist(console, monkeypatch, query)
    djangos = ["".join(row) for row in admin_list.results(cl)]
    ours = ["".join(row) for row in cl.model_admin.result_rows(cl)]
    assert len(ours) == (2 if "q" in query else 4)
    assert ours == djangos
    if "q" in query:
        assert "/change/?_changelist_filters=q%3Dr-" in ours[0]
    if "_popup" in query:
        assert "data-popup-opener=" in ours[0] and "action-select" not in ours[0]
    for row in ours:
        assert f"<tr>{row}</tr>" in page


def test_each_row_links_to_its_realm_and_its_console(console, monkeypatch, realms):
    page, _cl = page_and_changelist(console, monkeypatch)
    for realm in realms:
        change = reverse("admin:realms_realm_change", args=[realm.pk])
        manage = reverse("admin:realms_client_changelist") + f"?realm__id__exact={realm.pk}"
        assert f'value="{realm.pk}"' in page
        assert f'<a href="{change}">' in page and f'<a href="{manage}">Manage this realm</a>' in page
    assert '<a href="/admin/master/console/realms/realm/' in page  # the reverse()s above, as mounted
    assert "r&lt;&amp;&gt;&quot;&#x27;x</a>" in page and "&lt;b&gt;Tom &amp; &quot;Jerry&quot;&lt;/b&gt;" in page
    assert '<td class="field-display_name">-</td>' in page  # a blank display name: the empty value
    assert 'icon-no.svg" alt="False"' in page and 'icon-yes.svg" alt="True"' in page


def per_page_work(console, monkeypatch):
    """Permission checks and Django's row writer called for one realm list page."""
    calls = []
    can = base.can
    monkeypatch.setattr(base, "can", lambda *args, **kwargs: calls.append("can") or can(*args, **kwargs))
    writer = admin_list.items_for_result
    monkeypatch.setattr(admin_list, "items_for_result", lambda *args: calls.append("row") or writer(*args))
    realm_admin = admin.site._registry[Realm]
    for name in ("has_view_permission", "has_change_permission", "has_delete_permission"):
        check = getattr(realm_admin, name)
        monkeypatch.setattr(realm_admin, name, lambda *args, _name=name, _check=check, **kwargs:
                            calls.append(_name) or _check(*args, **kwargs))
    assert console.get(PAGE).status_code == 200
    monkeypatch.undo()
    return sorted(calls)


def test_no_work_per_row(console, monkeypatch, master):
    Realm.objects.create(name="r0000")
    two_rows = per_page_work(console, monkeypatch)
    Realm.objects.bulk_create(Realm(name=f"r{i:04d}") for i in range(1, 12))
    ten_rows = per_page_work(console, monkeypatch)
    assert two_rows == ten_rows
    assert "row" not in ten_rows
