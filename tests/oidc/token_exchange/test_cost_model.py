"""The cost model (docs/cost-model.md) of a standard token exchange (RFC 8693): ``requester``
exchanges a user's access token for one for ``target``, once the realm's configuration is cached,
held exactly."""
from tests.conftest import assert_costs

from .conftest import exchange, password_token

# (queries, shared-cache calls) per request, with what they are. Keep docs/cost-model.md in step.
EXPECTED = {
    # The subject token's client sessions (of its client and of the requester) in one query, the
    # event; the SSO session and the revocation marks at once from the cache.
    "token_exchange": (2, 1),
}


def test_queries_and_cache_calls_per_request_type(http, realm, measure):
    subject = password_token(http, realm)["access_token"]
    assert exchange(http, realm, subject, audience="target").status_code == 200  # the clients cached
    found = {}
    with measure() as found["token_exchange"]:
        response = exchange(http, realm, subject, audience="target")
    assert response.status_code == 200 and response.json()["access_token"], response.content
    assert_costs(found, EXPECTED)
