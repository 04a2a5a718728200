"""Single use under concurrency: polls of one approved auth_req_id racing on PostgreSQL (each
thread its own connection, committed data) get tokens exactly once."""
import pytest
from django.test import Client as HttpClient

from tests.concurrency import all_at_once
from tests.oidc.ciba.conftest import answer, poll, start


@pytest.mark.postgresql
@pytest.mark.django_db(transaction=True)
def test_racing_redemptions_get_tokens_once(realm, channel):
    http = HttpClient()
    auth_req_id = start(http, realm).json()["auth_req_id"]
    assert answer(http, realm, channel.bearer()).status_code == 200

    def redeem():
        response = poll(HttpClient(), realm, auth_req_id)
        return response.status_code, response.json().get("error")

    results = all_at_once(12, redeem)
    assert [r for r in results if r[0] == 200] == [(200, None)]
    assert all(r == (400, "invalid_grant") for r in results if r[0] != 200)
