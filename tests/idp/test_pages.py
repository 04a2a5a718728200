"""The pages no realm owns: a welcome page at /, themed "not found" and error pages for people,
Keycloak's JSON bodies where programs ask, and never Django's debug page."""
import pytest
from django.test import Client

from realms.representation.bootstrap import ensure_demo_realm

pytestmark = pytest.mark.django_db


def test_welcome_page_links_to_the_console(client):
    page = client.get("/")
    assert page.status_code == 200 and page["Content-Type"].startswith("text/html")
    text = page.content.decode()
    assert 'href="/admin/master/console/"' in text and "<title>Welcome</title>" in text
    assert "/demo/" not in text  # no demo realm outside dev mode


def test_welcome_page_in_dev_mode_links_to_the_demo_realm(client, settings, fresh_caches):
    settings.IDP_DEV_MODE = True
    ensure_demo_realm()
    text = client.get("/").content.decode()
    assert 'href="/demo/"' in text and 'href="/realms/demo/account/"' in text


@pytest.mark.parametrize("path", ["/no-such-page", "/realms/no-such-realm/protocol/openid-connect/auth",
                                  "/realms/no-such-realm/login-actions/authenticate"])
def test_people_get_a_themed_not_found_page(client, path, fresh_caches):
    page = client.get(path)
    assert page.status_code == 404 and page["Content-Type"].startswith("text/html")
    text = page.content.decode()
    assert "Page not found" in text and 'id="kc-content"' in text and "URLconf" not in text
    assert "<title>We are sorry…</title>" in text  # no realm named, no dangling separator


@pytest.mark.parametrize("path, body", [
    ("/realms/no-such-realm/.well-known/openid-configuration", {"error": "Realm does not exist"}),
    ("/realms/no-such-realm/protocol/openid-connect/certs", {"error": "Realm does not exist"}),
    ("/realms/no-such-realm", {"error": "Realm does not exist"}),
    ("/realms/no-such-realm/protocol/openid-connect/userinfo", {"error": "Realm does not exist"}),
    ("/admin/serverinfo/no-such-resource", {"error": "HTTP 404 Not Found"}),
])
def test_programs_get_json(client, path, body, fresh_caches):
    answer = client.get(path)
    assert answer.status_code == 404 and answer.json() == body


@pytest.mark.parametrize("path", ["/realms/demo/account/no-such-resource", "/no-such-page"])
def test_a_program_asking_for_json_gets_json_on_any_path(client, path, fresh_caches):
    # As Keycloak's error handler: JSON unless a page was asked for (the Account REST API's callers).
    ensure_demo_realm()
    answer = client.get(path, HTTP_ACCEPT="application/json")
    assert answer.status_code == 404 and answer.json() == {"error": "HTTP 404 Not Found"}


def test_the_token_endpoint_of_an_unknown_realm_answers_json(client, fresh_caches):
    answer = client.post("/realms/no-such-realm/protocol/openid-connect/token", {"grant_type": "password"})
    assert answer.status_code == 404 and answer.json() == {"error": "Realm does not exist"}


def test_an_unexpected_error_tells_nothing_and_is_themed_or_json(settings):
    settings.ROOT_URLCONF = "tests.idp.boom_urls"
    http = Client(raise_request_exception=False)
    page = http.get("/boom")
    assert page.status_code == 500 and "An internal server error has occurred" in page.content.decode()
    assert "a bug" not in page.content.decode() and "Traceback" not in page.content.decode()
    api = http.get("/admin/realms/boom")
    assert api.status_code == 500 and api.json() == {
        "error": "unknown_error", "error_description": "For more on this error consult the server log."}
