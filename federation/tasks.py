"""Celery tasks of user federation, run by the beat entries ``federation.ldap.schedule`` keeps."""
import logging

from celery import shared_task

from realms.models import Component

logger = logging.getLogger("idp.federation")


@shared_task(name="federation.ldap_sync", acks_late=True)
def ldap_sync(component_id, changed_only=False):
    from .ldap.connection import DirectoryUnavailable
    from .ldap.sync import sync

    component = Component.objects.filter(pk=component_id).select_related("realm").first()
    if component is None:
        return None  # removed since it was scheduled
    try:
        return sync(component, changed_only=changed_only)
    except DirectoryUnavailable as exc:
        # The next period tries again; what was imported stays.
        logger.warning("LDAP provider %s: sync skipped, directory unavailable: %s", component_id, exc)
        return None
