"""Fixtures of the client registration tests: the realm ``acme`` (Keycloak's default
registration policies, as a new realm gets them), its admins, and helpers that call the
registration service as a client would (JSON, a bearer token or none)."""
import json

import pytest
from django.test import Client as HttpClient

from realms.models import Component
from realms.representation.components import REGISTRATION_POLICY
from tests.realms.test_admin_rest_api import (  # noqa: F401 (fixtures)
    PASSWORD,
    Api,
    acme,
    created_id,
    master_api,
    realm_admin,
    token,
)

OIDC = "openid-connect"


def call(method, realm, provider, body=None, *, bearer=None, client_id=None, **headers):
    path = f"/realms/{realm.name}/clients-registrations/{provider}" + (f"/{client_id}" if client_id else "")
    if bearer:
        headers["HTTP_AUTHORIZATION"] = f"Bearer {bearer}"
    http = HttpClient()
    kwargs = {"content_type": "application/json", "data": json.dumps(body)} if body is not None else {}
    return getattr(http, method)(path, **kwargs, **headers)


def initial_token(api, realm, count=1, expiration=0):
    resp = api("post", f"{realm.name}/clients-initial-access", {"count": count, "expiration": expiration})
    assert resp.status_code == 201, resp.content
    return resp.json()["token"]


def policy(realm, provider_id, sub_type="anonymous"):
    return Component.objects.get(realm=realm, provider_type=REGISTRATION_POLICY, provider_id=provider_id,
                                 sub_type=sub_type)


def trust_localhost(realm):
    """The anonymous Trusted Hosts policy trusting the loopback caller (the test client's address)."""
    p = policy(realm, "trusted-hosts")
    p.config = {**p.config, "trusted-hosts": ["localhost", "127.0.0.1"]}
    p.save()
    return p


@pytest.fixture
def admin(master_api):
    return master_api


@pytest.fixture(autouse=True)
def _events_stored(request):
    """User events of ``acme`` are stored, so the tests read them."""
    if "acme" in request.fixturenames:
        realm = request.getfixturevalue("acme")
        realm.events_enabled = True
        realm.save()
