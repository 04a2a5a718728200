"""Single use under concurrency: polls of one approved device code racing on PostgreSQL (each
thread its own connection, committed data) get tokens exactly once: the redemption is one
``DELETE ... RETURNING`` guarded by the state, which only one of them can do."""
import pytest
from django.test import Client as HttpClient

from oidc.models import DeviceAuthorization
from tests.concurrency import all_at_once

from .conftest import authorize, poll, sign_in


@pytest.mark.postgresql
@pytest.mark.django_db(transaction=True)
def test_racing_redemptions_get_tokens_once(realm):
    http = HttpClient()
    started = authorize(http, realm).json()
    assert sign_in(HttpClient(), realm, started["user_code"])["Location"].endswith("/device/status")

    def redeem():
        response = poll(HttpClient(), realm, started["device_code"])
        return response.status_code, response.json().get("error")

    results = all_at_once(8, redeem)
    assert [r for r in results if r[0] == 200] == [(200, None)]
    assert all(r == (400, "invalid_grant") for r in results if r[0] != 200), results
    assert not DeviceAuthorization.objects.exists()
