"""The cost model (docs/cost-model.md) of the device grant (RFC 8628): the device's poll while the
user has not answered, and the poll that redeems the approved code, once the realm's
configuration is cached, held exactly."""
from django.db import connection
from django.test import Client as HttpClient

from tests.conftest import assert_costs

from .conftest import authorize, error, poll, sign_in

# (queries, shared-cache calls) per request, with what they are. Keep docs/cost-model.md in step.
EXPECTED = {
    "device_poll_pending": (0, 1),  # the request's copy in the cache
    # The row redeemed (one DELETE ... RETURNING); the SSO session with its user (missed in the
    # cache: the sign-in on the device page wrote it to the database only; the user is not read
    # again), the client session, the user's consent grant, the event. In the cache: the
    # request's copy read and dropped, the SSO session missed and put there.
    "device_poll_approved": (5, 4),
}


def _approved(http, realm):
    """A device code the user approved on the user-code page."""
    started = authorize(http, realm).json()
    assert sign_in(HttpClient(), realm, started["user_code"])["Location"].endswith("/device/status")
    return started["device_code"]


def test_queries_and_cache_calls_per_request_type(http, realm, measure):
    assert poll(http, realm, _approved(http, realm)).status_code == 200  # the realm and the client cached
    pending = authorize(http, realm).json()["device_code"]
    assert error(poll(http, realm, pending))[1] == "authorization_pending"
    found = {}
    with measure() as found["device_poll_pending"]:
        assert error(poll(http, realm, pending))[1] == "authorization_pending"
    approved = _approved(http, realm)
    with measure() as found["device_poll_approved"]:
        response = poll(http, realm, approved)
    assert response.status_code == 200 and response.json()["access_token"], response.content
    expected = EXPECTED
    if connection.vendor != "postgresql":
        # The SSO session and its user are one round trip on PostgreSQL (rows.ahead), two on SQLite.
        expected = {**EXPECTED, "device_poll_approved": (6, 4)}
    assert_costs(found, expected)
