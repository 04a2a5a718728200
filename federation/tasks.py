"""LDAP synchronizations in the background: the Celery task the schedule's beat entries
(``federation.ldap.schedule``) and the console's buttons run, each run recorded in the provider's
``SyncStatus``. Without a broker (dev mode) a sync asked for from the console runs in a thread of
this process instead, so that the request answers at once: the switch is the console's jobs'
(``IDP_JOBS_IN_PROCESS``, by default on in dev mode only), as Celery would run it eagerly, inside
the request."""
import datetime
import logging

import ldap
from celery import shared_task
from django.db import transaction
from django.utils import timezone

from realms import background
from realms.models import Component

from .errors import FederationError
from .models import SyncStatus

logger = logging.getLogger("idp.federation")

# A queued or running sync older than this is taken as lost (a worker killed) and may be asked again.
STALE = datetime.timedelta(hours=1)


class SyncUnderWay(FederationError):
    """A synchronization of this provider is already queued or running."""


@shared_task(name="federation.ldap_sync", acks_late=True)
def ldap_sync(component_id, changed_only=False):
    from .ldap.connection import DirectoryUnavailable, _describe
    from .ldap.sync import sync

    component = Component.objects.filter(pk=component_id).select_related("realm").first()
    if component is None:
        return None  # removed since it was scheduled
    now = timezone.now()
    SyncStatus.objects.update_or_create(component_id=component_id, defaults={
        "changed_only": changed_only, "state": SyncStatus.RUNNING, "started": now, "finished": None, "error": "",
        "ignored": False, "added": 0, "updated": 0, "removed": 0, "failed": 0}, create_defaults={
        "changed_only": changed_only, "state": SyncStatus.RUNNING, "requested": now, "started": now})
    try:
        result = sync(component, changed_only=changed_only)
    except DirectoryUnavailable as exc:
        # The next period tries again; what was imported stays.
        logger.warning("LDAP provider %s: sync skipped, directory unavailable: %s", component_id, exc)
        _finish(component_id, SyncStatus.FAILED, error=f"The directory could not be reached: {exc}")
        return None
    except ldap.LDAPError as exc:  # a refused bind or search: the settings need fixing
        logger.warning("LDAP provider %s: sync refused by the directory: %s", component_id, _describe(exc))
        _finish(component_id, SyncStatus.FAILED, error=f"The directory refused: {_describe(exc)}")
        return None
    except Exception as exc:
        logger.exception("LDAP provider %s: sync failed", component_id)
        _finish(component_id, SyncStatus.FAILED, error=f"The synchronization failed: {exc}")
        raise
    _finish(component_id, SyncStatus.DONE, ignored=result["ignored"],
            **{k: result[k] for k in ("added", "updated", "removed", "failed")})
    return result


def _finish(component_id, state, **fields):
    SyncStatus.objects.filter(component_id=component_id).update(state=state, finished=timezone.now(), **fields)


def start_sync(component, changed_only):
    """Queue a sync of ``component`` (after the caller's transaction commits) and mark it queued;
    SyncUnderWay if one is queued or running."""
    now = timezone.now()
    with transaction.atomic():
        status = SyncStatus.objects.select_for_update().filter(component=component).first()
        if status is not None and status.state in (SyncStatus.QUEUED, SyncStatus.RUNNING) and \
                now - (status.started or status.requested) < STALE:
            raise SyncUnderWay
        SyncStatus.objects.update_or_create(component=component, defaults={
            "changed_only": changed_only, "state": SyncStatus.QUEUED, "requested": now, "started": None,
            "finished": None, "ignored": False, "added": 0, "updated": 0, "removed": 0, "failed": 0, "error": ""})
        transaction.on_commit(lambda: _dispatch(component.pk, changed_only))


def _dispatch(component_id, changed_only):
    background.start("IDP_JOBS_IN_PROCESS", "ldap-sync", ldap_sync, (component_id, changed_only), ldap_sync.delay)
