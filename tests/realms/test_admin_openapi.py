"""``GET /admin/openapi.json``: a valid OpenAPI 3.1 document of every registered Admin API route,
open without a token, naming the realm-management role each operation requires."""
import re

import pytest
from django.test import Client
from openapi_spec_validator import validate

from realms.admin_api import resources

pytestmark = pytest.mark.django_db


@pytest.fixture
def doc():
    resp = Client().get("/admin/openapi.json")  # no token: open, as Keycloak publishes its own
    assert resp.status_code == 200
    assert resp["Content-Type"] == "application/json"
    return resp.json()


def test_the_document_is_valid_openapi(doc):
    validate(doc)
    assert doc["openapi"] == "3.1.0"
    ids = [op["operationId"] for ops in doc["paths"].values() for op in ops.values()]
    assert len(ids) == len(set(ids))


def test_every_registered_route_is_described_with_its_role(doc):
    paths = doc["paths"]
    registered = {"/admin/realms/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", str(p.pattern)) for p in resources.patterns()}
    assert registered | {"/admin/realms", "/admin/serverinfo"} == paths.keys()
    user = paths["/admin/realms/{realm}/users/{user_id}"]
    assert user.keys() == {"get", "put", "delete"}
    assert (user["get"]["x-required-role"], user["delete"]["x-required-role"]) == ("view-users", "manage-users")
    assert [p["name"] for p in user["get"]["parameters"]] == ["realm", "user_id"]
    assert paths["/admin/realms/{realm}/partialImport"]["post"]["x-required-role"] == "manage-realm"
    assert paths["/admin/realms/{realm}/partial-export"]["post"]["x-required-role"] == "manage-realm"
    assert "post" in paths["/admin/realms/{realm}/webhooks"]  # another app's registered resource
    assert paths["/admin/realms/{realm}/events/config"]["put"]["x-required-role"] == "manage-events"
