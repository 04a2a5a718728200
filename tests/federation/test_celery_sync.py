"""LDAP syncs run by a real Celery worker and its beat (django-celery-beat's database scheduler
reads each provider's periods from its tables), and a worker SIGKILLed in the middle of a sync:
the realm keeps whole pages only, ``lastSync`` does not move, and the next run completes it."""
import pytest
import redis
from django.conf import settings as django_settings
from django.db import connection

from realms.models import Component, User
from tests.webhooks.workers import kill, start_worker, stop, wait_until

from .conftest import make_provider

pytestmark = [pytest.mark.services, pytest.mark.usefixtures("fresh_caches")]
USERS = 4000


def _imported(component):
    return User.objects.filter(federation_link=component).count()


def test_beat_runs_each_providers_sync_and_a_killed_sync_is_completed_by_the_next(
        transactional_db, realm, directory, tmp_path):
    redis.Redis.from_url(django_settings.CELERY_BROKER_URL).flushdb()
    directory.add_users("bulk", USERS)
    # Pages of 10: hundreds of transactions, so that the kill lands between two of them.
    component = make_provider(realm, directory, fullSyncPeriod="1", batchSizeForSync="10")
    first = start_worker(connection.settings_dict["NAME"], tmp_path)
    second = None
    try:
        assert wait_until(lambda: _imported(component) >= 200, timeout=60), open(first.log_path).read()[-3000:]
        kill(first)
        done = _imported(component)
        assert done < USERS, "the sync finished before the kill: make it longer"
        assert done % 10 == 0  # whole pages only
        assert not User.objects.filter(federation_link=component, attributes__LDAP_ID__isnull=True).exists()
        assert Component.objects.get(pk=component.pk).get("lastSync") == ""
        second = start_worker(connection.settings_dict["NAME"], tmp_path)
        assert wait_until(lambda: Component.objects.get(pk=component.pk).get("lastSync") != "", timeout=90), \
            open(second.log_path).read()[-3000:]
        assert _imported(component) == USERS
        assert User.objects.filter(realm=realm).values("username").distinct().count() == \
            User.objects.filter(realm=realm).count()
    finally:
        kill(first)
        if second is not None:
            stop(second)
