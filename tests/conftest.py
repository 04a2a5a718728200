import pytest


@pytest.fixture
def outbound_loopback(settings):
    """Production rules of ``realms.outbound`` plus the exceptions the loopback test servers need."""
    settings.IDP_OUTBOUND_ALLOW_HTTP = True
    settings.IDP_OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]
