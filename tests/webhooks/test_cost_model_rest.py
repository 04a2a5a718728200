"""The cost model (docs/cost-model.md) of the webhook REST API's endpoint list, for the master
realm's admin, once the realm's configuration is cached, held exactly. The realm has three
endpoints, so that a query per listed endpoint shows as a changed count."""
import pytest
from django.db import connection

from tests.conftest import assert_costs
from tests.webhooks.test_rest import api, tokens  # noqa: F401 (fixtures)
from webhooks import services

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("loopback_allowed")]
ENDPOINTS = 3

# (queries, shared-cache calls) per request, with what they are. Keep docs/cost-model.md in step.
EXPECTED = {
    # The caller's user and roles, the endpoints, their secrets; the token's revocation marks and
    # SSO session from the cache.
    "webhooks_list": (3, 1),
}


def test_queries_and_cache_calls_per_request_type(realm, api, receiver_server, measure, fresh_caches):
    for _ in range(ENDPOINTS):
        services.create_endpoint(realm, receiver_server.url(), [])
    assert api("get", "").status_code == 200  # warm: the realm's configuration and the token checked once
    found = {}
    with measure() as found["webhooks_list"]:
        response = api("get", "")
    assert response.status_code == 200 and len(response.json()) == ENDPOINTS, response.content
    expected = EXPECTED
    if connection.vendor != "postgresql":
        # The caller's realm is a second statement on SQLite (rows.ahead sends both at once on PostgreSQL).
        expected = {"webhooks_list": (4, 1)}
    assert_costs(found, expected)
