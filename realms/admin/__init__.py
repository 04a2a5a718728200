"""The admin console: Django admin for realms and everything a realm owns.

One realm at a time (docs/decisions/0003-admin-console-realm-scoping.md): the admin's session
holds a current realm, chosen from the switcher in the header or with ``?realm__id__exact=`` on
any list. Every list of realm-owned objects shows that realm only, a new object goes into it,
and every foreign-key and many-to-many choice is limited to the realm of the object being
edited. Every add, change, delete and action is recorded as a Keycloak-style admin event in the
realm it touched, through ``realms.audit.events.emit``, inside the same transaction.

One module per resource; ``base`` holds ConsoleAdmin and the form pieces, ``switcher`` the
current realm, ``audit`` the admin events (docs/decisions/0018), ``navigation`` the index and
sidebar in Keycloak's sections and the pages' titles (decision 0065).
"""
from django.contrib import admin
from django_celery_beat import admin as celery_beat_admin

# Django's admin autodiscovery imports ``realms.admin``; importing the resource modules here is
# what runs their ``@admin.register`` decorators. The names below are what other apps extend.
from . import (  # noqa: F401
    client_scopes,
    clients,
    events,
    flows,
    groups,
    identity_providers,
    navigation,
    organizations,
    realm,
    realm_keys,
    roles,
    sessions,
    transfer,
    users,
)
from .base import ConsoleAdmin
from .clients import ClientAdmin, ClientForm
from .switcher import RealmFilter, current_realm

# The periodic tasks are the LDAP providers' sync periods (federation.ldap.schedule keeps one per
# provider and kind): a page of their own would be a second way to set them, overwritten by the
# next save of the provider. Imported here so that they are registered before being taken away.
for _model in (celery_beat_admin.PeriodicTask, celery_beat_admin.IntervalSchedule, celery_beat_admin.CrontabSchedule,
               celery_beat_admin.SolarSchedule, celery_beat_admin.ClockedSchedule):
    admin.site.unregister(_model)

__all__ = ["ClientAdmin", "ClientForm", "ConsoleAdmin", "RealmFilter", "current_realm"]
