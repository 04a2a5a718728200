"""The production cache backend (idp.cache.RedisCache) against a real Redis: Django's cache API
works unchanged, and one redis client serves every call instead of one per call."""
import os

import pytest
from django.core.cache import caches

from idp.config import redis_cache


@pytest.fixture
def redis_backend(settings):
    settings.CACHES = {"default": redis_cache(os.environ["IDP_TEST_REDIS_URL"])}
    cache = caches["default"]
    cache.clear()
    yield cache
    cache.clear()


def test_cache_api_round_trips(redis_backend):
    cache = redis_backend
    cache.set("k", {"a": [1, 2]}, 30)
    assert cache.get("k") == {"a": [1, 2]} and cache.get("missing", "d") == "d"
    assert cache.add("n", 1, None) and not cache.add("n", 5, None)
    assert cache.incr("n") == 2
    with pytest.raises(ValueError):
        cache.incr("absent")
    cache.set_many({"x": 1, "y": 2})
    assert cache.get_many(["x", "y"]) == {"x": 1, "y": 2}
    cache.delete_many(["x", "y", "k"])
    assert cache.get_many(["x", "y", "k"]) == {}


def test_one_client_per_pool(redis_backend):
    client = redis_backend._cache.get_client(write=True)
    redis_backend.get("k")
    redis_backend.set("k", 1)
    assert redis_backend._cache.get_client() is client and redis_backend._cache.get_client(write=True) is client
