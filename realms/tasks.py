"""Periodic housekeeping of realm state (scheduled by idp/celery.py)."""
from celery import shared_task

from . import sessions


@shared_task(name="realms.purge_expired_sessions", ignore_result=True)
def purge_expired_sessions():
    """Expired SSO sessions are ended lazily on use; this removes the ones never used again."""
    return sessions.expired_sessions_purge()
