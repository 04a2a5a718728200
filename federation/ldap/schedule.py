"""The periodic syncs of each LDAP provider as django-celery-beat ``PeriodicTask`` rows (the
database scheduler reads them): ``fullSyncPeriod`` and ``changedSyncPeriod`` (seconds, -1 off)
from the component's config, kept in step whenever the component is saved or deleted."""
import json

from django_celery_beat.models import IntervalSchedule, PeriodicTask

from .config import PROVIDER_ID


def _name(component_id, kind):
    return f"ldap {kind} sync {component_id}"


def _period(component, name):
    try:
        return int(component.get(name, "-1") or -1)
    except ValueError:
        return -1


def update(component):
    enabled = component.get("enabled", "true").lower() != "false" and \
        component.get("importEnabled", "true").lower() != "false"
    for kind, key, changed in (("full", "fullSyncPeriod", False), ("changed", "changedSyncPeriod", True)):
        period = _period(component, key)
        if component.provider_id != PROVIDER_ID or period <= 0 or not enabled:
            PeriodicTask.objects.filter(name=_name(component.pk, kind)).delete()
            continue
        interval, _ = IntervalSchedule.objects.get_or_create(every=period, period=IntervalSchedule.SECONDS)
        PeriodicTask.objects.update_or_create(name=_name(component.pk, kind), defaults={
            "task": "federation.ldap_sync", "interval": interval, "enabled": True,
            "args": json.dumps([component.pk, changed])})


def remove(component):
    PeriodicTask.objects.filter(name__in=[_name(component.pk, k) for k in ("full", "changed")]).delete()
