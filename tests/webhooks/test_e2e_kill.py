"""A worker killed (SIGKILL) in the middle of a delivery loses nothing: once its lease runs out
the sweeper of another worker retakes the delivery, which arrives at least once, same webhook-id.
Its own module so that no other worker is running."""
import pytest
import standardwebhooks
from django.db import connection

from webhooks import services
from webhooks.models import Delivery

from .workers import kill, start_worker, stop
from .workers import wait_until as _wait

pytestmark = [pytest.mark.services, pytest.mark.usefixtures("loopback_allowed")]


@pytest.fixture
def worker_dir(tmp_path):
    return tmp_path


def test_worker_killed_mid_delivery_loses_nothing(transactional_db, worker_dir, receiver_server):
    from realms.models import Realm

    realm = Realm.objects.create(name="e2e-kill")
    receiver_server.script = [(200, {}, b"", 2.0)]  # the first request hangs while we kill the worker
    endpoint, secret = services.create_endpoint(realm, receiver_server.url(), [])
    first_worker = start_worker(connection.settings_dict["NAME"], worker_dir)
    second_worker = None
    try:
        message = services.send_test_event(endpoint)
        assert len(receiver_server.wait_for(1)) == 1
        kill(first_worker)
        assert Delivery.objects.get(message=message).state == Delivery.SENDING
        second_worker = start_worker(connection.settings_dict["NAME"], worker_dir)
        requests = receiver_server.wait_for(2, timeout=30)
        assert len(requests) >= 2
        assert {r["headers"]["webhook-id"] for r in requests} == {message.id}
        standardwebhooks.Webhook(secret).verify(requests[-1]["body"], requests[-1]["headers"])
        assert _wait(lambda: Delivery.objects.get(message=message).state == Delivery.DELIVERED)
    finally:
        kill(first_worker)
        if second_worker is not None:
            stop(second_worker)
