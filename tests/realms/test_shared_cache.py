"""Per-process copies: loaded once, dropped at once by a change here, reloaded within the check
interval after another process's change, and kept after a rolled-back change is forgotten."""
import pytest
from django.core.cache import caches
from django.db import transaction

from realms.data.shared_cache import GENERATIONS, LocalCopies

pytestmark = pytest.mark.django_db


@pytest.fixture
def cache():
    return caches[GENERATIONS]


@pytest.fixture
def copies(cache):
    loads = []
    values = {"a": 1}

    def load(key):
        loads.append(key)
        return values[key]

    c = LocalCopies("test-copies", load, check_seconds=60)
    cache.delete(c.generation_key("a"))
    return c, values, loads


def test_loaded_once_then_served_from_the_copy(copies):
    c, values, loads = copies
    assert c.get("a") == 1 and c.get("a") == 1
    assert loads == ["a"]


def test_a_change_here_is_seen_at_once(copies):
    c, values, loads = copies
    c.get("a")
    values["a"] = 2
    c.invalidate("a")
    assert c.get("a") == 2


def test_another_process_change_is_seen_after_the_check_interval(copies, cache):
    c, values, loads = copies
    c.get("a")
    values["a"] = 3
    cache.add(c.generation_key("a"), 0, timeout=None)
    cache.incr(c.generation_key("a"))  # what another process's invalidate() does
    assert c.get("a") == 1  # within the interval: the copy
    c.check_seconds = 0
    assert c.get("a") == 3
    c.check_seconds = 0
    assert c.get("a") == 3 and loads == ["a", "a"]  # same generation: no reload


def test_invalidate_bumps_again_after_commit(copies, cache, django_capture_on_commit_callbacks):
    c, values, loads = copies
    with django_capture_on_commit_callbacks(execute=True):
        with transaction.atomic():
            c.invalidate("a")
            first = cache.get(c.generation_key("a"))
    assert cache.get(c.generation_key("a")) == first + 1
