"""Admission control (realms.http.admission, decision 0091): per-address and per-client limits a
realm sets on its token endpoint, sign-in, registration and reset pages and the Admin API,
answered 429 with Retry-After and an error event; the trusted proxy's own address is never
limited; a bad limit is refused where it is written."""
import pytest
from django.test import Client as HttpClient
from django.test import override_settings

from realms.models import Event, Realm
from realms.representation import RepresentationError, import_realm
from realms.users.accounts import enable_service_account
from tests.oidc.browser.conftest import PASSWORD
from tests.oidc.endpoints.conftest import basic

from .test_reset_and_registration import AUTH, PARAMS, form_action, html, link, register_page

pytestmark = pytest.mark.django_db
TOKEN = "/realms/acme/protocol/openid-connect/token"


def limit(realm, **limits):
    realm.attributes = {**(realm.attributes or {}), **{f"rateLimit.{k.replace('__', '.')}": str(v)
                                                       for k, v in limits.items()}}
    realm.save()


SECRET = "secret-of-web-app"  # make_client's


@pytest.fixture
def confidential(web_app):
    web_app.service_accounts_enabled = True
    web_app.save()
    enable_service_account(web_app)
    return web_app


def grant(http, secret=SECRET, **meta):
    # Over HTTPS: the realm requires it from addresses other than this machine's.
    return http.post(TOKEN, {"grant_type": "client_credentials"}, HTTP_AUTHORIZATION=basic("web-app", secret),
                     secure=True, **meta)


def test_token_endpoint_by_address(realm, confidential):
    limit(realm, token__perAddress=3)
    http = HttpClient()
    assert [grant(http).status_code for _ in range(3)] == [200, 200, 200]
    refused = grant(http)
    assert refused.status_code == 429 and refused.json()["error"] == "too_many_requests"
    assert 1 <= int(refused["Retry-After"]) <= 60
    event = Event.objects.filter(realm=realm, type="CLIENT_LOGIN_ERROR").latest("time")
    assert event.error == "too_many_requests"
    # Another address has its own budget.
    assert grant(http, REMOTE_ADDR="192.0.2.7").status_code == 200


def test_token_endpoint_by_client_counts_only_the_authenticated(realm, confidential):
    limit(realm, token__perClient=2)
    http = HttpClient()
    # Someone guessing the secret cannot spend the client's budget.
    assert {grant(http, secret="wrong", REMOTE_ADDR=f"198.51.100.{n}").status_code for n in range(5)} == {401}
    assert [grant(http, REMOTE_ADDR=f"192.0.2.{n}").status_code for n in range(3)] == [200, 200, 429]


@override_settings(IDP_TRUSTED_PROXIES=["10.0.0.0/8"])
def test_the_trusted_proxy_itself_is_not_limited_but_the_clients_behind_it_are(realm, confidential):
    limit(realm, token__perAddress=1)
    http = HttpClient()
    assert [grant(http, REMOTE_ADDR="10.0.0.2").status_code for _ in range(3)] == [200, 200, 200]
    behind = {"REMOTE_ADDR": "10.0.0.2", "HTTP_X_FORWARDED_FOR": "203.0.113.9"}
    assert [grant(http, **behind).status_code for _ in range(2)] == [200, 429]


def test_sign_in_posts_by_address(realm, web_app, bob):
    limit(realm, login__perAddress=2)
    http = HttpClient()
    page = http.get(AUTH, PARAMS)
    for _ in range(2):
        assert http.post(form_action(page), {"username": "bob", "password": "wrong"}).status_code == 200
    assert http.get(AUTH, PARAMS).status_code == 200  # showing the page is not counted
    refused = http.post(form_action(page), {"username": "bob", "password": PASSWORD})
    assert refused.status_code == 429 and "Too many attempts from your network." in html(refused)
    assert 1 <= int(refused["Retry-After"]) <= 60
    assert Event.objects.filter(realm=realm, type="LOGIN_ERROR", error="too_many_requests").count() == 1


def test_registration_posts_by_address(realm, web_app):
    realm.registration_allowed = True
    limit(realm, registration__perAddress=1, login__perAddress=100)
    http = HttpClient()
    page = register_page(http)
    assert 'id="kc-register-form"' in html(page)
    assert http.post(form_action(page), {"username": ""}).status_code == 400  # refused by the form
    refused = http.post(form_action(page), {"username": "carol"})
    assert refused.status_code == 429
    assert Event.objects.filter(realm=realm, type="REGISTER_ERROR", error="too_many_requests").exists()


def test_admin_api_by_client(realm, admin_api):
    master = Realm.objects.get(name="master")
    limit(master, admin__perClient=2)
    assert [admin_api("get", "acme").status_code for _ in range(2)] == [200, 200]
    refused = admin_api("get", "acme")
    assert refused.status_code == 429 and 1 <= int(refused["Retry-After"]) <= 60
    assert "error" in refused.json()


def test_a_bad_limit_is_refused_at_import_and_in_the_admin_api(realm, admin_api):
    for attributes, message in (({"rateLimit.token.perAddress": "many"}, "positive number"),
                                ({"rateLimit.login.perClient": "5"}, "Unknown rate limit"),
                                ({"rateLimit.token.perAddress": "0"}, "positive number")):
        with pytest.raises(RepresentationError, match=message):
            import_realm({"realm": "limited", "enabled": True, "attributes": attributes})
        answer = admin_api("put", "acme", {"attributes": attributes})
        assert answer.status_code == 400 and message in answer.json()["errorMessage"], answer.content
    assert not Realm.objects.filter(name="limited").exists()
    assert not any(k.startswith("rateLimit.") for k in Realm.objects.get(name="acme").attributes)


def test_reset_credentials_posts_by_address(realm, web_app, bob):
    realm.reset_password_allowed = True
    limit(realm, resetCredentials__perAddress=1)
    http = HttpClient()
    form = http.get(link(http.get(AUTH, PARAMS), "kc-forgot-password"))
    assert http.post(form_action(form), {"username": "nobody@example.com"}).status_code == 200
    refused = http.post(form_action(form), {"username": "bob@example.com"})
    assert refused.status_code == 429 and "Too many attempts from your network." in html(refused)
    assert Event.objects.filter(realm=realm, type="RESET_PASSWORD_ERROR", error="too_many_requests").exists()


def test_admin_api_by_address(realm, admin_api):
    limit(Realm.objects.get(name="master"), admin__perAddress=1)
    assert admin_api("get", "acme").status_code == 200
    assert admin_api("get", "acme").status_code == 429
