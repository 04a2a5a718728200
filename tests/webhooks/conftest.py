import pytest

from .servers import Receiver


@pytest.fixture
def realm(db):
    from realms.models import Realm

    return Realm.objects.create(name="wh-realm", admin_events_enabled=True, events_enabled=True)


@pytest.fixture
def loopback_allowed(settings):
    """Production rules plus an explicit allowlist for the loopback test receivers."""
    settings.IDP_WEBHOOK_ALLOW_HTTP = True
    settings.IDP_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    settings.IDP_WEBHOOK_RETRY_SCHEDULE = [1, 1, 1]
    settings.IDP_WEBHOOK_RETRY_JITTER = 0.0


@pytest.fixture
def receiver_server():
    server = Receiver("127.0.0.1")
    yield server
    server.close()
