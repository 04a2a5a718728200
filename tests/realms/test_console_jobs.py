"""The console's jobs do not pile up: starting one removes the jobs that ended more than a week
ago (with the exports they hold); recent ones and those still queued or running stay."""
import datetime

import pytest
from django.utils import timezone

from realms.admin import jobs
from realms.models import ConsoleJob
from realms.representation.services import create_realm

pytestmark = pytest.mark.django_db


def test_starting_a_job_removes_the_jobs_that_ended_over_a_week_ago():
    realm = create_realm("acme")
    long_ago = timezone.now() - jobs.KEPT - datetime.timedelta(minutes=1)

    def job(status, created):
        return ConsoleJob.objects.create(kind=ConsoleJob.PARTIAL_EXPORT, realm=realm, status=status, created=created,
                                         result={"export": {"realm": "acme"}})

    old_done, old_failed = job(ConsoleJob.DONE, long_ago), job(ConsoleJob.FAILED, long_ago)
    old_running, recent = job(ConsoleJob.RUNNING, long_ago), job(ConsoleJob.DONE, timezone.now())
    jobs.start(job(ConsoleJob.QUEUED, timezone.now()))  # runs once the test's transaction commits: never
    left = set(ConsoleJob.objects.values_list("pk", flat=True))
    assert old_done.pk not in left and old_failed.pk not in left
    assert {old_running.pk, recent.pk} <= left
