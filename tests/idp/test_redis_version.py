"""Readiness refuses a Redis older than 7.0 in words: webhook deliveries reach the workers through
a list taken with BLMPOP (decision 0119), which an older Redis does not have, so its workers would
take none. A real Redis answering is checked by tests/production/test_stateless.py."""
from idp.management_server import redis_version_ready


def test_a_redis_older_than_7_is_not_ready_in_words():
    assert redis_version_ready("6.2.14") == (
        False, "Redis 6.2.14: 7.0 or later is needed (webhook deliveries use BLMPOP)")


def test_redis_7_and_later_are_ready():
    for version in ("7.0.15", "7.4.2", "10.1.0"):
        assert redis_version_ready(version) == (True, "UP")
