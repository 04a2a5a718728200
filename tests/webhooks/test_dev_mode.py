"""Dev mode needs no Celery worker and no Redis: a login's webhook is delivered by the in-process
runner (a thread pool, the sender lanes and a sweeper thread in the web process), signed and
verifiable, with in-process concurrency limits."""
import pytest
import standardwebhooks
from django.test import Client as HttpClient

from webhooks import conf, dispatch, services
from webhooks.models import Delivery

from .test_e2e_celery import _realm_with_user
from .workers import wait_until


@pytest.fixture
def dev_mode(settings):
    settings.IDP_DEV_MODE = True
    settings.CELERY_BROKER_URL = "memory://"  # as idp.settings.dev: no broker, no Redis
    yield
    dispatch.shutdown()


@pytest.mark.django_db(transaction=True)
def test_a_login_in_dev_mode_reaches_the_receiver(dev_mode, receiver_server):
    assert conf.get("IDP_WEBHOOK_INPROCESS") and conf.get("IDP_WEBHOOK_REDIS_URL") == ""
    realm = _realm_with_user("dev-mode")  # its own name: realms are cached per process by name
    endpoint, secret = services.create_endpoint(realm, receiver_server.url(), ["auth.login"])  # http + loopback: dev
    resp = HttpClient().post(f"/realms/{realm.name}/protocol/openid-connect/token", {
        "grant_type": "password", "client_id": "app", "client_secret": "app-secret-" + "x" * 20,
        "username": "alice", "password": "alice-pw", "scope": "openid"})
    assert resp.status_code == 200, resp.content
    requests = receiver_server.wait_for(1, timeout=10)
    assert len(requests) == 1
    payload = standardwebhooks.Webhook(secret).verify(requests[0]["body"], requests[0]["headers"])
    assert payload["type"] == "auth.login" and payload["data"]["realm"] == realm.name
    assert wait_until(lambda: Delivery.objects.get(endpoint=endpoint).state == Delivery.DELIVERED)
