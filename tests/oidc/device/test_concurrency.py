"""Single use under concurrency: polls of one approved device code racing on PostgreSQL (each
thread its own connection, committed data) get tokens exactly once: the redemption is one
``DELETE ... RETURNING`` guarded by the state, which only one of them can do."""
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection
from django.test import Client as HttpClient

from oidc.models import DeviceAuthorization

from .conftest import authorize, poll, sign_in


@pytest.mark.postgresql
@pytest.mark.django_db(transaction=True)
def test_racing_redemptions_get_tokens_once(realm):
    http = HttpClient()
    started = authorize(http, realm).json()
    assert sign_in(HttpClient(), realm, started["user_code"])["Location"].endswith("/device/status")

    workers = 8
    barrier = threading.Barrier(workers)

    def redeem(_):
        try:
            barrier.wait(10)  # all at once
            response = poll(HttpClient(), realm, started["device_code"])
            return response.status_code, response.json().get("error")
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(redeem, range(workers)))
    assert [r for r in results if r[0] == 200] == [(200, None)]
    assert all(r == (400, "invalid_grant") for r in results if r[0] != 200), results
    assert not DeviceAuthorization.objects.exists()
