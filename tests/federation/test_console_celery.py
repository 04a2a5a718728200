"""In production a synchronization asked for on the console is the Celery task of a worker (no
thread of the web server): queued on the page until a worker takes it, then done with its counts."""
import pytest
import redis
from django.conf import settings as django_settings
from django.db import connection

from federation.models import SyncStatus
from realms.models import Realm, User
from tests.realms.test_admin import make_admin
from tests.webhooks.workers import start_worker, stop, wait_until

from .conftest import make_provider

pytestmark = [pytest.mark.services, pytest.mark.usefixtures("fresh_caches")]
BASE = "/admin/master/console/federation/ldapcomponent/"


def test_a_sync_asked_for_on_the_console_runs_on_a_celery_worker(transactional_db, realm, directory, client,
                                                                 settings, tmp_path):
    settings.IDP_JOBS_IN_PROCESS = False
    redis.Redis.from_url(django_settings.CELERY_BROKER_URL).flushdb()
    component = make_provider(realm, directory)
    directory.add_user("olga", "olga-password")
    client.force_login(make_admin(Realm.objects.get(name="master")))
    page = client.post(f"{BASE}{component.pk}/action/sync-all/", follow=True).content.decode()
    assert "Synchronize all users: started." in page
    assert 'data-state="queued"' in client.get(f"{BASE}{component.pk}/change/").content.decode()
    assert not User.objects.filter(federation_link=component).exists()  # nothing ran in this process
    worker = start_worker(connection.settings_dict["NAME"], tmp_path, beat=False)
    try:
        assert wait_until(lambda: SyncStatus.objects.get(component=component).state == SyncStatus.DONE, timeout=60), \
            open(worker.log_path).read()[-3000:]
    finally:
        stop(worker)
    assert User.objects.filter(federation_link=component).count() == 1
    page = client.get(f"{BASE}{component.pk}/change/").content.decode()
    assert 'data-state="done"' in page and "1 imported users, 0 updated users" in page
