"""Fixtures and helpers of the device grant tests (RFC 8628): a realm imported from Keycloak's
representation with device-enabled clients and a user with a password, the three endpoints, and
a sign-in on the user-code page with Django's test client (the form posts a browser would make)."""
import html
import re
import uuid

import pytest
from django.test import Client as HttpClient

from realms.data import realm_cache
from realms.models import Client, Realm
from realms.representation import import_realm
from tests.oidc.endpoints.conftest import basic

SECRET = "device-secret-" + "x" * 20
PASSWORD = "device-password-1"
GRANT = "urn:ietf:params:oauth:grant-type:device_code"
ON = {"oauth2.device.authorization.grant.enabled": "true"}
PENDING = "The authorization request is still pending"


def representation(name, **realm_fields):
    return {
        "realm": name, "enabled": True, "eventsEnabled": True, "oauth2DevicePollingInterval": 0, **realm_fields,
        "clients": [
            {"clientId": "tv", "publicClient": True, "standardFlowEnabled": False, "attributes": ON},
            {"clientId": "box", "secret": SECRET, "attributes": ON},
            {"clientId": "radio", "publicClient": True, "attributes": ON},
            {"clientId": "no-device", "publicClient": True},
            {"clientId": "strict", "publicClient": True, "consentRequired": True, "attributes": ON},
        ],
        "users": [
            {"username": "alice", "enabled": True, "email": "alice@example.org", "emailVerified": True,
             "firstName": "Alice", "lastName": "Liddell", "realmRoles": [f"default-roles-{name}"],
             "credentials": [{"type": "password", "value": PASSWORD, "temporary": False}]},
        ],
    }


@pytest.fixture
def realm(db, fresh_caches):
    return import_realm(representation("d" + uuid.uuid4().hex[:10])).realm


@pytest.fixture
def http():
    return HttpClient()


def set_client_attributes(realm, client_id, **attributes):
    client = Client.objects.get(realm=realm, client_id=client_id)
    client.attributes = {**client.attributes, **attributes}
    client.save()
    realm_cache.clear()


def set_realm(realm, **fields):
    Realm.objects.filter(pk=realm.pk).update(**fields)
    realm_cache.clear()


def device_url(realm):
    return f"/realms/{realm.name}/protocol/openid-connect/auth/device"


def token_url(realm):
    return f"/realms/{realm.name}/protocol/openid-connect/token"


def page_url(realm):
    return f"/realms/{realm.name}/device"


def authorize(http, realm, client_id="tv", secret=None, **params):
    data = {k: v for k, v in {"scope": "openid", **params}.items() if v is not None}
    if secret is None:
        data["client_id"] = client_id
        return http.post(device_url(realm), data)
    return http.post(device_url(realm), data, HTTP_AUTHORIZATION=basic(client_id, secret))


def poll(http, realm, device_code, client_id="tv", secret=None):
    data = {"grant_type": GRANT}
    if device_code is not None:
        data["device_code"] = device_code
    if secret is None:
        data["client_id"] = client_id
        return http.post(token_url(realm), data)
    return http.post(token_url(realm), data, HTTP_AUTHORIZATION=basic(client_id, secret))


def error(response):
    body = response.json()
    return response.status_code, body["error"], body.get("error_description")


def form_action(response):
    return html.unescape(re.search(r'<form[^>]* action="([^"]+)"', response.content.decode()).group(1))


def enter_code(browser, realm, user_code):
    """The user-code page's POST: the login page (or, signed in, what follows)."""
    return browser.post(page_url(realm), {"device_user_code": user_code})


def sign_in(browser, realm, user_code, *, consent="accept", password=PASSWORD):
    """Enter the code, sign in as alice, answer the consent page if it comes; the last response."""
    login = enter_code(browser, realm, user_code)
    assert login.status_code == 200, login.content[:500]
    response = browser.post(form_action(login), {"username": "alice", "password": password})
    if response.status_code == 200 and 'name="consent"' in response.content.decode():
        response = browser.post(form_action(response), {"consent": consent})
    return response
