"""Single use under concurrency: authorization requests racing with one pushed request_uri on
PostgreSQL (each thread its own connection, committed data) are served exactly once."""
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection
from django.test import Client as HttpClient

from .conftest import AUTH, push


@pytest.mark.postgresql
@pytest.mark.django_db(transaction=True)
def test_racing_uses_of_a_request_uri_are_served_once(web_app):
    request_uri = push(HttpClient()).json()["request_uri"]
    workers = 12
    barrier = threading.Barrier(workers)

    def use(_):
        try:
            barrier.wait(10)  # all at once
            return HttpClient().get(AUTH, {"client_id": "web-app", "request_uri": request_uri}).status_code
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(use, range(workers)))
    assert sorted(results) == [200] + [400] * (workers - 1)
