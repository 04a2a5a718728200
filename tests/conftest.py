import pytest
from django.core.cache import cache


@pytest.fixture
def fresh_caches():
    """Tests re-create realms under new ids inside rolled-back transactions (no delete signals):
    the shared cache and the per-process realm configuration are dropped around each one."""
    from realms import realm_cache

    cache.clear()
    realm_cache.clear()
    yield
    cache.clear()
    realm_cache.clear()


@pytest.fixture
def outbound_loopback(settings):
    """Production rules of ``realms.outbound`` plus the exceptions the loopback test servers need."""
    settings.IDP_OUTBOUND_ALLOW_HTTP = True
    settings.IDP_OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]
