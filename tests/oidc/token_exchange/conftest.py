"""Fixtures of the token exchange tests: a realm imported from a Keycloak representation where
client ``initial`` gets users' tokens (its audience mapper names ``requester`` and ``plain``),
``requester`` is enabled for standard token exchange, ``impersonator``'s service account holds
realm-management's ``impersonation``; users sign in with the password grant (a real session)."""
import base64
import uuid

import pytest
from django.test import Client as HttpClient

from realms.models import Event
from realms.representation import import_realm

SECRET = "exchange-secret-" + "s" * 20
PASSWORD = "exchange-pass-1"
GRANT = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS = "urn:ietf:params:oauth:token-type:access_token"
REFRESH = "urn:ietf:params:oauth:token-type:refresh_token"
ID = "urn:ietf:params:oauth:token-type:id_token"
JWT = "urn:ietf:params:oauth:token-type:jwt"
ENABLED = {"standard.token.exchange.enabled": "true"}


def audience_mapper(name, audience):
    return {"name": name, "protocol": "openid-connect", "protocolMapper": "oidc-audience-mapper",
            "config": {"included.client.audience": audience, "access.token.claim": "true"}}


def may_act_mapper():
    """The subject token's may_act (delegation), from the user's attribute ``may_act`` as JSON."""
    return {"name": "may-act", "protocol": "openid-connect", "protocolMapper": "oidc-usermodel-attribute-mapper",
            "config": {"user.attribute": "may_act", "claim.name": "may_act", "jsonType.label": "JSON",
                       "access.token.claim": "true"}}


def representation(name, idps=()):
    confidential = {"secret": SECRET, "standardFlowEnabled": False}
    return {
        "realm": name, "enabled": True, "eventsEnabled": True,
        "roles": {"client": {"target": [{"name": "read"}]}},
        "identityProviders": list(idps),
        "clients": [
            {"clientId": "initial", **confidential, "directAccessGrantsEnabled": True, "serviceAccountsEnabled": True,
             "protocolMappers": [audience_mapper("to-requester", "requester"), audience_mapper("to-plain", "plain"),
                                 may_act_mapper()]},
            {"clientId": "requester", **confidential, "directAccessGrantsEnabled": True, "attributes": dict(ENABLED),
             "protocolMappers": [audience_mapper("to-plain", "plain"), may_act_mapper()]},
            {"clientId": "refresher", **confidential,
             "attributes": {**ENABLED, "standard.token.exchange.enableRefreshRequestedTokenType": "SAME_SESSION"}},
            {"clientId": "plain", **confidential},
            {"clientId": "outsider", **confidential, "attributes": dict(ENABLED)},
            {"clientId": "public-ex", "publicClient": True, "attributes": dict(ENABLED),
             "redirectUris": ["https://app.example/cb"]},
            {"clientId": "target", **confidential},
            {"clientId": "off-target", **confidential, "enabled": False},
            {"clientId": "impersonator", **confidential, "serviceAccountsEnabled": True},
        ],
        "users": [
            {"username": "alice", "enabled": True, "email": "alice@example.org", "firstName": "Alice",
             "credentials": [{"type": "password", "value": PASSWORD}],
             "realmRoles": [f"default-roles-{name}"], "clientRoles": {"target": ["read"]}},
            {"username": "carol", "enabled": True, "credentials": [{"type": "password", "value": PASSWORD}],
             "realmRoles": [f"default-roles-{name}"]},
            {"username": "service-account-impersonator", "enabled": True, "serviceAccountClientId": "impersonator",
             "clientRoles": {"realm-management": ["impersonation"]}},
        ],
    }


@pytest.fixture
def realm(db, fresh_caches):
    return import_realm(representation("x" + uuid.uuid4().hex[:10])).realm


@pytest.fixture
def http():
    return HttpClient()


def basic(client_id, secret=SECRET):
    return "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()


def token_url(realm):
    return f"/realms/{realm.name}/protocol/openid-connect/token"


def password_token(http, realm, username="alice", client_id="initial", scope=""):
    data = {"grant_type": "password", "username": username, "password": PASSWORD}
    if scope:
        data["scope"] = scope
    answer = http.post(token_url(realm), data, HTTP_AUTHORIZATION=basic(client_id))
    assert answer.status_code == 200, answer.content
    return answer.json()


def exchange(http, realm, subject_token=None, client_id="requester", secret=SECRET, **params):
    data = {"grant_type": GRANT, **{k: v for k, v in params.items() if v is not None}}
    if subject_token is not None:
        data["subject_token"] = subject_token
        data.setdefault("subject_token_type", ACCESS)
    headers = {"HTTP_AUTHORIZATION": basic(client_id, secret)} if secret else {}
    if not secret:
        data["client_id"] = client_id
    return http.post(token_url(realm), data, **headers)


def last_event(realm):
    return Event.objects.filter(realm=realm).order_by("-time", "-id").first()


def refused(answer, status, error, description=None):
    assert answer.status_code == status, answer.content
    body = answer.json()
    assert body["error"] == error, body
    if description is not None:
        assert body["error_description"] == description, body
    return body
