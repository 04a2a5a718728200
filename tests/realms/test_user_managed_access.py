"""The realm's ``userManagedAccessAllowed`` (Keycloak's "User-managed access" switch): stored,
off by default, through the Admin API, import and export and the console's General tab; while it
is off the Account REST API's ``resources`` routes answer Keycloak's 403 and the account console
neither lists nor serves "My resources"."""
import copy
import json

import pytest
from django.test import Client as HttpClient

from realms.models import Client, Realm
from realms.representation import export_realm, import_realm
from realms.representation.services import create_realm
from tests.authz.test_uma import pat, protection, realm_b  # noqa: F401 (realm_b: a fixture)
from tests.browser import login_form_action
from tests.realms.test_admin import acme, console, errors_of, master, submit  # noqa: F401 (fixtures)
from tests.realms.test_admin_rest_api import master_api  # noqa: F401 (fixture)
from tests.realms.test_import_export import load

pytestmark = pytest.mark.django_db
REFUSED = {"errorMessage": "User-managed access not enabled"}


def test_off_by_default_as_keycloak():
    assert create_realm("fresh").user_managed_access_allowed is False


def test_admin_api_round_trip(master_api):  # noqa: F811
    realm = create_realm("uma")
    assert master_api("get", "uma").json()["userManagedAccessAllowed"] is False
    assert master_api("put", "uma", {"userManagedAccessAllowed": True}).status_code == 204
    assert master_api("get", "uma").json()["userManagedAccessAllowed"] is True
    realm.refresh_from_db()
    assert realm.user_managed_access_allowed is True
    refused = master_api("put", "uma", {"userManagedAccessAllowed": "sometimes"})
    assert refused.status_code == 400
    assert refused.json() == {"errorMessage": "userManagedAccessAllowed: expected a boolean"}
    assert master_api("put", "uma", {"userManagedAccessAllowed": False}).status_code == 204
    realm.refresh_from_db()
    assert realm.user_managed_access_allowed is False


@pytest.mark.parametrize("allowed", [True, False])
def test_keycloak_export_imported_and_exported_again(allowed):
    data = copy.deepcopy(load("quickstarts-kc9-full-export-realm-b.json"))
    assert data["userManagedAccessAllowed"] is False  # Keycloak's own file, as exported
    data["userManagedAccessAllowed"] = allowed
    result = import_realm(data)
    assert not [w for w in result.warnings if "userManagedAccessAllowed" in w]
    assert result.realm.user_managed_access_allowed is allowed
    assert export_realm(result.realm)["userManagedAccessAllowed"] is allowed


def test_keycloak_26_export_with_it_off():
    result = import_realm(load("keycloak-fgap-realm-kc26-full-export.json"))
    assert not [w for w in result.warnings if "userManagedAccessAllowed" in w]
    assert result.realm.user_managed_access_allowed is False
    assert export_realm(result.realm)["userManagedAccessAllowed"] is False


def test_console_general_tab_switch(console, acme):  # noqa: F811
    url = f"/admin/master/console/realms/realm/{acme.pk}/change/"
    page = console.get(url).content.decode()
    assert 'for="id_user_managed_access_allowed"' in page and "User-managed access" in page
    response = submit(console, url, "realm_form", {"user_managed_access_allowed": "on"})
    assert not errors_of(response), errors_of(response)
    acme.refresh_from_db()
    assert acme.user_managed_access_allowed is True
    response = submit(console, url, "realm_form", {"user_managed_access_allowed": None})
    assert not errors_of(response), errors_of(response)
    acme.refresh_from_db()
    assert acme.user_managed_access_allowed is False


# The Account REST API and the account console, on Keycloak's realm-b quickstart --------------------

def account_token(username):
    resp = HttpClient().post("/realms/realm-b/protocol/openid-connect/token", {
        "grant_type": "password", "client_id": "account-console", "username": username, "password": username})
    assert resp.status_code == 200, resp.content
    return resp.json()["access_token"]


@pytest.fixture
def album(realm_b):  # noqa: F811
    Client.objects.filter(realm=realm_b, client_id="account-console").update(direct_access_grants_enabled=True)
    made = protection("post", "/resource_set", pat(), {
        "name": "Holidays", "resource_scopes": ["album:view"], "owner": "jdoe", "ownerManagedAccess": True})
    assert made.status_code == 201, made.content
    return made.json()


def switch(allowed):
    realm = Realm.objects.get(name="realm-b")
    realm.user_managed_access_allowed = allowed
    realm.save(update_fields=["user_managed_access_allowed"])


def test_account_api_resources_refused_while_off(album):
    api = HttpClient(HTTP_AUTHORIZATION=f"Bearer {account_token('jdoe')}", HTTP_ACCEPT="application/json")
    base = "/realms/realm-b/account"
    routes = [("get", ""), ("get", "/shared-with-me"), ("get", "/shared-with-others"), ("get", "/pending-requests"),
              ("get", f"/{album['_id']}"), ("get", f"/{album['_id']}/permissions"),
              ("get", f"/{album['_id']}/permissions/requests"), ("get", f"/{album['_id']}/user")]
    for method, path in routes:
        answer = getattr(api, method)(f"{base}/resources{path}")
        assert (answer.status_code, answer.json()) == (403, REFUSED), path
    share = [{"username": "kolo", "scopes": ["album:view"]}]
    answer = api.put(f"{base}/resources/{album['_id']}/permissions", json.dumps(share), content_type="application/json")
    assert (answer.status_code, answer.json()) == (403, REFUSED)
    assert api.get(base).status_code == 200  # the rest of the account stays

    # Refused before the roles are looked at, as Keycloak's resource locator: no token is still 401.
    assert HttpClient(HTTP_ACCEPT="application/json").get(f"{base}/resources").status_code == 401

    switch(True)
    for method, path in routes[:-1]:  # ``user`` without a value answers 204
        assert getattr(api, method)(f"{base}/resources{path}").status_code == 200, path
    assert [r["_id"] for r in api.get(f"{base}/resources").json()] == [album["_id"]]
    answer = api.put(f"{base}/resources/{album['_id']}/permissions", json.dumps(share), content_type="application/json")
    assert answer.status_code == 204


def test_account_console_lists_and_serves_my_resources_only_when_on(album):
    browser = HttpClient()
    login = browser.get("/realms/realm-b/account/", follow=True).content.decode()
    done = browser.post(login_form_action(login), {"username": "jdoe", "password": "jdoe"}, follow=True)
    assert done.status_code == 200
    home = browser.get("/realms/realm-b/account/").content.decode()
    assert "My resources" not in home and 'href="/realms/realm-b/account/resources"' not in home
    refused = browser.get("/realms/realm-b/account/resources")
    assert refused.status_code == 403 and "Holidays" not in refused.content.decode()

    switch(True)
    home = browser.get("/realms/realm-b/account/").content.decode()
    assert 'href="/realms/realm-b/account/resources">My resources</a>' in home
    page = browser.get("/realms/realm-b/account/resources")
    assert page.status_code == 200 and "Holidays" in page.content.decode()
