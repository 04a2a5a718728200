"""Periodic housekeeping of realm state (scheduled by idp/celery.py), e-mail, and the console's import and export jobs."""
from celery import shared_task

from . import purges
from .admin.jobs import TASK as CONSOLE_JOB_TASK
from .admin.jobs import run as run_job
from .http import email


@shared_task(name="realms.purge", ignore_result=True)
def purge():
    """Every registered purge (``realms.purges``), each bounded in batch size and time: expired
    sessions are ended lazily on use, this removes the ones never used again, and the rest."""
    return purges.run()


@shared_task(name=email.TASK, ignore_result=True, bind=True, max_retries=8)
def send_email(self, realm_id, to, subject, text_body, html_body):
    """One e-mail of a realm (``realms.http.email``): retried with growing delays (about 4 hours in
    all) while the realm's SMTP server cannot be reached."""
    try:
        email.deliver(realm_id, to, subject, text_body, html_body)
    except email.TRANSIENT as exc:
        raise self.retry(exc=exc, countdown=min(30 * 2 ** self.request.retries, 3600)) from exc


@shared_task(name=CONSOLE_JOB_TASK, ignore_result=True)
def run_console_job(job_id):
    """A console import or export (``realms.admin.jobs``), on a worker in production."""
    run_job(job_id)
