import pytest

from tests.servers import Receiver


@pytest.fixture
def realm(db):
    from realms.models import Realm

    return Realm.objects.create(name="wh-realm", admin_events_enabled=True, events_enabled=True)


@pytest.fixture
def loopback_allowed(outbound_loopback, settings):
    """Production rules plus an explicit allowlist for the loopback test receivers."""
    settings.IDP_WEBHOOK_RETRY_SCHEDULE = [1, 1, 1]
    settings.IDP_WEBHOOK_RETRY_JITTER = 0.0


@pytest.fixture
def receiver_server():
    server = Receiver("127.0.0.1")
    yield server
    server.close()
