"""The cost model (docs/cost-model.md) of CIBA in poll mode: the client's poll while the user has
not answered, and the poll that redeems the approved request, once the realm's configuration is
cached, held exactly."""
from django.db import connection

from tests.conftest import assert_costs

from .conftest import answer, poll, start

# (queries, shared-cache calls) per request, with what they are. Keep docs/cost-model.md in step.
EXPECTED = {
    "ciba_poll_pending": (0, 1),  # the request's copy in the cache
    # The approved row redeemed (one DELETE ... RETURNING); the SSO session with its user (missed
    # in the cache: the channel's answer wrote it to the database only), the client session, the
    # event. In the cache: the request's copy read and dropped, the SSO session missed and put there.
    "ciba_poll_approved": (4, 4),
}


def _approved(http, realm, channel):
    """An auth_req_id the user approved through the authentication channel."""
    auth_req_id = start(http, realm).json()["auth_req_id"]
    assert answer(http, realm, channel.bearer()).status_code == 200
    return auth_req_id


def test_queries_and_cache_calls_per_request_type(http, realm, alice, channel, measure):
    assert poll(http, realm, _approved(http, realm, channel)).status_code == 200  # the realm and client cached
    pending = start(http, realm).json()["auth_req_id"]
    assert poll(http, realm, pending).json()["error"] == "authorization_pending"
    found = {}
    with measure() as found["ciba_poll_pending"]:
        assert poll(http, realm, pending).json()["error"] == "authorization_pending"
    approved = _approved(http, realm, channel)
    with measure() as found["ciba_poll_approved"]:
        response = poll(http, realm, approved)
    assert response.status_code == 200 and response.json()["access_token"], response.content
    expected = EXPECTED
    if connection.vendor != "postgresql":
        # The SSO session and its user are one round trip on PostgreSQL (rows.ahead), two on SQLite.
        expected = {**EXPECTED, "ciba_poll_approved": (5, 4)}
    assert_costs(found, expected)
