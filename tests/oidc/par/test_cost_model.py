"""The cost model (docs/cost-model.md) of a pushed authorization request (RFC 9126), once the
realm's configuration is cached, held exactly."""
from tests.conftest import assert_costs

from .conftest import push

# (queries, shared-cache calls) per request, with what they are. Keep docs/cost-model.md in step.
EXPECTED = {
    # The request inserted, the event (expired ones go in the periodic purge, decision 0087).
    "par_push": (2, 0),
}


def test_queries_and_cache_calls_per_request_type(client, web_app, measure):
    assert push(client).status_code == 201  # the realm's configuration cached
    found = {}
    with measure() as found["par_push"]:
        response = push(client)
    assert response.status_code == 201 and response.json()["request_uri"], response.content
    assert_costs(found, EXPECTED)
