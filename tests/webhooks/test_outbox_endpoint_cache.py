"""Most realms have no webhook endpoint: their events must not cost a query each (the answer is
cached per process). An endpoint added in this process is seen by the next event; one added by
another process within the check interval (a generation in the shared cache)."""
import time

import pytest
from django.core.cache import cache

from realms.audit.events import emit
from webhooks import outbox, services
from webhooks.models import Endpoint, Message

pytestmark = pytest.mark.django_db


@pytest.fixture
def quiet_realm(realm):
    realm.events_enabled = False  # no Event row either: what is left is the outbox's own work
    realm.save()
    return realm


def test_events_of_a_realm_without_endpoints_cost_no_query(quiet_realm, django_assert_num_queries):
    emit(quiet_realm, "CLIENT_LOGIN", client_id="app")
    with django_assert_num_queries(0):
        for _ in range(3):
            emit(quiet_realm, "CLIENT_LOGIN", client_id="app")
    assert not Message.objects.exists()


def test_endpoint_added_in_this_process_gets_the_next_event(quiet_realm):
    emit(quiet_realm, "CLIENT_LOGIN", client_id="app")
    services.create_endpoint(quiet_realm, "https://hooks.example.com/in", ["auth.*"])
    emit(quiet_realm, "CLIENT_LOGIN", client_id="app")
    assert Message.objects.get().type == "auth.client_login"


def test_endpoint_added_by_another_process_is_seen_within_the_check_interval(quiet_realm):
    emit(quiet_realm, "CLIENT_LOGIN", client_id="app")
    # Another worker's change: the row appears without this process's signals, and that worker
    # bumps the generation in the shared cache.
    Endpoint.objects.bulk_create([Endpoint(realm=quiet_realm, url="https://hooks.example.com/in")])
    shared = outbox._has_enabled_endpoints.generation_key(quiet_realm.pk)
    cache.add(shared, 0, timeout=None)
    cache.incr(shared)
    time.sleep(outbox._has_enabled_endpoints.check_seconds)
    emit(quiet_realm, "CLIENT_LOGIN", client_id="app")
    assert Message.objects.get().type == "auth.client_login"
