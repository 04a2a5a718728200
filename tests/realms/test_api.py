"""The Admin REST API's one base (realms/admin_api/): the /admin/realms/ prefix is the API's and answers
JSON only, the console lives at /admin/master/console/, and one builder records admin events."""
import json

import pytest
from django.http import Http404
from django.test import Client, RequestFactory
from rest_framework import exceptions

from realms.admin_api import errors
from realms.admin_api.jsonbody import loads
from realms.audit import admin_events
from realms.models import Event, Realm, Role
from realms.representation import import_realm
from realms.users.accounts import create_user
from tests.browser import console_sign_in

pytestmark = pytest.mark.django_db

PASSWORD = "api-admin-password-1"


def token(realm, username):
    resp = Client().post(f"/realms/{realm}/protocol/openid-connect/token", {
        "grant_type": "password", "client_id": "admin-cli", "username": username, "password": PASSWORD})
    assert resp.status_code == 200, resp.content
    return resp.json()["access_token"]


@pytest.fixture
def master_admin():
    master = Realm.objects.get(name="master")
    user = create_user(master, "api-root", password=PASSWORD)
    user.roles.add(Role.objects.get(realm=master, client=None, name="admin"))
    return user


@pytest.mark.parametrize("path", ["/admin/realms/master/users", "/admin/realms", "/admin/realms/",
                                  "/admin/realms/no-such-realm/clients/x"])
@pytest.mark.parametrize("header", [None, "Bearer not.a.token", "Basic Zm9vOmJhcg=="])
def test_api_prefix_without_a_valid_token_is_a_json_401(path, header):
    extra = {"HTTP_AUTHORIZATION": header} if header else {}
    resp = Client().get(path, HTTP_ACCEPT="text/html", **extra)  # a browser's Accept: still JSON
    assert resp.status_code == 401 and "Location" not in resp
    assert resp["Content-Type"] == "application/json"
    assert resp.json() == {"error": "HTTP 401 Unauthorized"}
    assert resp["WWW-Authenticate"] == "Bearer"


def test_unknown_api_path_with_a_valid_token_is_a_json_404(master_admin):
    api = Client(HTTP_AUTHORIZATION=f"Bearer {token('master', 'api-root')}")
    for method in ("get", "post", "delete"):
        resp = getattr(api, method)("/admin/realms/master/no-such-resource")
        assert resp.status_code == 404 and resp.json() == {"error": "Unable to find matching target resource method"}


def test_the_api_skips_the_browser_middleware_yet_checks_the_host(master_admin, settings):
    bearer = f"Bearer {token('master', 'api-root')}"  # its issuer is the base URL of this run
    settings.ALLOWED_HOSTS = ["id.example.org", "testserver"]
    api = Client(HTTP_AUTHORIZATION=bearer)
    resp = api.get("/admin/realms/master")
    assert resp.status_code == 200 and resp["Content-Length"] == str(len(resp.content))
    assert resp["X-Content-Type-Options"] == "nosniff"  # the security middleware still runs
    assert not resp.has_header("X-Frame-Options") and not resp.cookies  # no session, CSRF, framing work
    refused = api.get("/admin/realms/master", HTTP_HOST="attacker.example")
    # Django's DisallowedHost answer, before any view (the API would answer JSON).
    assert refused.status_code == 400 and not refused["Content-Type"].startswith("application/json")
    console = Client().get("/admin/master/console/")
    assert console["X-Frame-Options"] == "DENY"  # the console: the whole stack


def test_json_bodies_have_a_depth_limit():
    assert loads(b'{"a": "[[[[{{", "b": [[1], {"c": []}]}') == {"a": "[[[[{{", "b": [[1], {"c": []}]}
    for deep in ("[" * 100_000, "[" * 65 + "]" * 65, '{"a":' * 100_000):
        with pytest.raises(ValueError):
            loads(deep)
    assert loads("[" * 64 + "]" * 64)


def test_console_lives_at_admin_master_console(master_admin):
    browser = Client()
    assert browser.get("/admin/")["Location"] == "/admin/master/console/"
    login = browser.get("/admin/master/console/login/", follow=True)  # the master realm's login page
    assert login.status_code == 200 and b'name="password"' in login.content
    resp = console_sign_in(browser, "api-root", PASSWORD)
    assert resp.status_code == 302 and resp["Location"] == "/admin/master/console/"
    page = browser.get("/admin/master/console/realms/realm/")
    assert page.status_code == 200 and b"master" in page.content


def _shape(event):
    """What every admin event carries, whoever made it: the keys set, not their values."""
    return {
        "kind": event.kind, "operation": bool(event.type), "resource_type": bool(event.resource_type),
        "auth": (bool(event.client_id), bool(event.user_id), bool(event.ip_address), sorted(event.details)),
        "representation": type(json.loads(event.representation)).__name__,
    }


def test_admin_event_builder_same_shape_from_console_api_and_import(master_admin, settings):
    settings.IDP_OUTBOUND_ALLOW_HTTP = True
    settings.IDP_OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    realm = Realm.objects.create(name="ev-realm", admin_events_enabled=True, admin_events_details_enabled=True)
    # Console: a group added on its page.
    console = Client()
    console.force_login(master_admin)
    console.get(f"/admin/master/console/realms/group/?realm__id__exact={realm.pk}")
    resp = console.post("/admin/master/console/realms/group/add/", {"realm": realm.pk, "name": "staff"},
                        REMOTE_ADDR="198.51.100.1")
    assert resp.status_code == 302, resp.content
    by_console = Event.objects.get(realm=realm, kind=Event.ADMIN, resource_type="GROUP")
    # API: a webhook endpoint created with a bearer token.
    api = Client(HTTP_AUTHORIZATION=f"Bearer {token('master', 'api-root')}")
    resp = api.post("/admin/realms/ev-realm/webhooks", json.dumps({"url": "http://127.0.0.1:9/hook"}),
                    content_type="application/json", REMOTE_ADDR="198.51.100.2")
    assert resp.status_code == 201, resp.content
    by_api = Event.objects.get(realm=realm, kind=Event.ADMIN, resource_type="WEBHOOK_ENDPOINT")
    # Import made by a caller.
    auth = admin_events.AuthDetails(realm_id=master_admin.realm_id, client_id="admin-cli",
                                    user_id=master_admin.pk, ip_address="198.51.100.3")
    imported = import_realm({"realm": "ev-imported", "adminEventsEnabled": True, "adminEventsDetailsEnabled": True},
                            auth=auth).realm
    by_import = Event.objects.get(realm=imported, kind=Event.ADMIN)

    assert [(e.type, e.resource_type, e.client_id, e.ip_address) for e in (by_console, by_api, by_import)] == [
        ("CREATE", "GROUP", "security-admin-console", "198.51.100.1"),
        ("CREATE", "WEBHOOK_ENDPOINT", "admin-cli", "198.51.100.2"),
        ("CREATE", "REALM", "admin-cli", "198.51.100.3"),
    ]
    assert _shape(by_console) == _shape(by_api) == _shape(by_import)
    assert all(e.user_id == master_admin.pk and e.details == {"authRealmId": master_admin.realm_id}
               for e in (by_console, by_api, by_import))
    assert json.loads(by_import.representation)["name"] == "ev-imported"


def test_import_without_a_caller_records_nothing():
    realm = import_realm({"realm": "ev-cli", "adminEventsEnabled": True}).realm
    assert not Event.objects.filter(realm=realm, kind=Event.ADMIN).exists()


@pytest.mark.parametrize("exc,status,body", [
    (errors.Conflict("User exists with same username"), 409, {"errorMessage": "User exists with same username"}),
    (errors.Invalid("Invalid value"), 400, {"errorMessage": "Invalid value"}),
    (exceptions.ValidationError({"username": ["This field is required."]}), 400,
     {"errorMessage": "This field is required."}),
    (errors.NotFound("Could not find client"), 404, {"error": "Could not find client"}),
    (Http404("anything"), 404, {"error": "HTTP 404 Not Found"}),
    (exceptions.MethodNotAllowed("PATCH"), 405, {"error": "HTTP 405 Method Not Allowed"}),
    (exceptions.ParseError("line 1"), 400, {"error": "unknown_error", "error_description": "Cannot parse the JSON"}),
    (RuntimeError("a detail for the log only"), 500,
     {"error": "unknown_error", "error_description": "For more on this error consult the server log."}),
])
def test_errors_in_keycloak_shape(exc, status, body):
    response = errors.exception_handler(exc, {"request": RequestFactory().get("/admin/realms/x/y")})
    assert (response.status_code, response.data) == (status, body)


def test_an_operation_a_resource_lacks_is_405_after_authentication(master_admin):
    api = Client(HTTP_AUTHORIZATION=f"Bearer {token('master', 'api-root')}")
    resp = api.patch("/admin/realms/master/webhooks", "{}", content_type="application/json")
    assert resp.status_code == 405 and resp.json() == {"error": "HTTP 405 Method Not Allowed"}
    assert Client().patch("/admin/realms/master/webhooks").status_code == 401
