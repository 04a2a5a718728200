"""Single use under concurrency: authorization requests racing with one pushed request_uri on
PostgreSQL (each thread its own connection, committed data) are served exactly once."""
import pytest
from django.test import Client as HttpClient

from tests.concurrency import all_at_once

from .conftest import AUTH, push


@pytest.mark.postgresql
@pytest.mark.django_db(transaction=True)
def test_racing_uses_of_a_request_uri_are_served_once(web_app):
    request_uri = push(HttpClient()).json()["request_uri"]
    results = all_at_once(12, lambda: HttpClient().get(
        AUTH, {"client_id": "web-app", "request_uri": request_uri}).status_code)
    assert sorted(results) == [200] + [400] * 11
