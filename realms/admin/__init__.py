"""The admin console: Django admin for realms and everything a realm owns.

One realm at a time (docs/decisions/0003-admin-console-realm-scoping.md): the admin's session
holds a current realm, chosen from the switcher in the header or with ``?realm__id__exact=`` on
any list. Every list of realm-owned objects shows that realm only, a new object goes into it,
and every foreign-key and many-to-many choice is limited to the realm of the object being
edited. Every add, change, delete and action is recorded as a Keycloak-style admin event in the
realm it touched, through ``realms.audit.events.emit``, inside the same transaction.

One module per resource; ``base`` holds ConsoleAdmin and the form pieces, ``switcher`` the
current realm, ``audit`` the admin events (docs/decisions/0018).
"""
# Django's admin autodiscovery imports ``realms.admin``; importing the resource modules here is
# what runs their ``@admin.register`` decorators. The names below are what other apps extend.
from . import client_scopes, clients, events, flows, groups, organizations, realm, realm_keys, roles, transfer, users  # noqa: F401
from .base import ConsoleAdmin
from .clients import ClientAdmin, ClientForm
from .switcher import RealmFilter, current_realm

__all__ = ["ClientAdmin", "ClientForm", "ConsoleAdmin", "RealmFilter", "current_realm"]
