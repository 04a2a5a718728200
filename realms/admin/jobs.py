"""The console's import and export jobs (``ConsoleJob``) and how they run: a thread of the server's
own process in dev mode (no broker; ``IDP_JOBS_IN_PROCESS``, as e-mail's ``IDP_EMAIL_IN_PROCESS``),
otherwise the Celery task ``realms.console_job`` on a worker. Each job writes in one transaction:
one that fails has changed nothing, and its row says why."""
import datetime
import logging

from celery import current_app
from django.db import transaction
from django.utils import timezone

from .. import background
from ..admin_api.partial import partial_export
from ..administration.admin_permissions import CONSOLE_CLIENT, grant_delegated_admin
from ..audit.admin_events import AuthDetails
from ..models import Client, ConsoleJob, Group, Role, User
from ..representation import RepresentationError, import_realm
from ..representation.partial import ResourceExists, partial_import

logger = logging.getLogger("idp.console_jobs")

TASK = "realms.console_job"
UNEXPECTED = "The job stopped on an unexpected error (the server's log has the details); nothing was changed."


# How long a finished job, and the export it may hold, stays to be looked at and downloaded.
KEPT = datetime.timedelta(days=7)


def start(job):
    """Run ``job`` (saved, QUEUED) once the transaction that saved it commits. Jobs that ended
    more than ``KEPT`` ago go first: nothing else would ever remove them or their exports."""
    ConsoleJob.objects.filter(created__lt=timezone.now() - KEPT, status__in=(ConsoleJob.DONE, ConsoleJob.FAILED)).delete()
    job_id = job.pk
    transaction.on_commit(lambda: _dispatch(job_id))


def _dispatch(job_id):
    background.start("IDP_JOBS_IN_PROCESS", "console-job", run, (job_id,),
                     lambda job_id: current_app.send_task(TASK, args=(job_id,)))


def _update(job, **fields):
    for name, value in fields.items():
        setattr(job, name, value)
    job.save(update_fields=list(fields))


def run(job_id):
    """The job's work, once: a job another run has claimed (a task delivered twice) is left alone."""
    if not ConsoleJob.objects.filter(pk=job_id, status=ConsoleJob.QUEUED).update(
            status=ConsoleJob.RUNNING, progress=10, step="Reading the file"):
        return
    job = ConsoleJob.objects.select_related("started_by", "realm").get(pk=job_id)
    user = job.started_by
    auth = AuthDetails(realm_id=user.realm_id if user else "", client_id=CONSOLE_CLIENT,
                       user_id=user.pk if user else "", ip_address=job.ip_address)
    try:
        result = _WORK[job.kind](job, auth)
    except (RepresentationError, ResourceExists) as exc:  # what is wrong with the file, in its own words
        _update(job, status=ConsoleJob.FAILED, step="", error=str(exc), payload=None, finished=timezone.now())
    except Exception:
        logger.exception("console job %s (%s of %s) failed", job.pk, job.kind, job.realm_name)
        _update(job, status=ConsoleJob.FAILED, step="", error=UNEXPECTED, payload=None, finished=timezone.now())
    else:
        _update(job, status=ConsoleJob.DONE, progress=100, step="", result=result, payload=None,
                finished=timezone.now())


def _counts(realm):
    return {"users": User.objects.filter(realm=realm, service_account_client=None).count(),
            "clients": Client.objects.filter(realm=realm).count(),
            "roles": Role.objects.filter(realm=realm).count(), "groups": Group.objects.filter(realm=realm).count()}


def _realm_import(job, auth):
    _update(job, progress=30, step="Writing the realm")
    with transaction.atomic():
        imported = import_realm(job.payload, auth=auth)
        if job.started_by is not None and not job.started_by.is_superuser:
            grant_delegated_admin(job.started_by, imported.realm)  # a realm's creator administers it
    _update(job, realm=imported.realm, realm_name=imported.realm.name)
    return {**_counts(imported.realm), "warnings": imported.warnings}


def _partial_import(job, auth):
    _update(job, progress=30, step="Writing the resources")
    return partial_import(job.realm, {**job.payload, "ifResourceExists": job.options["policy"]}, auth=auth).rep()


def _partial_export(job, auth):
    _update(job, progress=30, step="Reading the realm")
    rep = partial_export(job.realm, groups_and_roles=job.options.get("groups_and_roles", False),
                         clients=job.options.get("clients", False))
    return {"export": rep}


_WORK = {ConsoleJob.REALM_IMPORT: _realm_import, ConsoleJob.PARTIAL_IMPORT: _partial_import,
         ConsoleJob.PARTIAL_EXPORT: _partial_export}
