"""Impersonation as Keycloak does it: an admin allowed to impersonate (the ``impersonation``
role) opens an SSO session as the user in the user's realm; the browser gets that realm's
session cookie and goes to the realm's account console. The session carries the impersonator
in Keycloak's notes ``IMPERSONATOR_ID`` and ``IMPERSONATOR_USERNAME`` so it can be told apart,
and the ``IMPERSONATE`` event names them (details ``impersonator_realm``, ``impersonator``,
``impersonator_id``)."""
from django.db import transaction

from ..audit import events
from ..errors import RealmsError
from ..http.web import client_address
from . import sessions, sso_cookie

IMPERSONATOR_ID = "IMPERSONATOR_ID"
IMPERSONATOR_USERNAME = "IMPERSONATOR_USERNAME"


class ImpersonationRefused(RealmsError):
    """The user cannot be impersonated (disabled); the message is Keycloak's."""


def account_url(realm):
    return f"/realms/{realm.name}/account"


def impersonate(request, user, impersonator):
    """A new SSO session of ``user`` started by ``impersonator``; returns it. The caller sets its
    cookie on the response (``set_session_cookie``)."""
    realm = user.realm
    if not user.enabled:
        raise ImpersonationRefused("User is disabled")
    with transaction.atomic():
        user_session = sessions.create_user_session(realm, user, ip_address=client_address(request))
        user_session.notes = {IMPERSONATOR_ID: impersonator.pk, IMPERSONATOR_USERNAME: impersonator.username}
        user_session.save(update_fields=["notes"])
        events.emit(realm, "IMPERSONATE", user_id=user.pk, session_id=user_session.pk,
                    ip_address=client_address(request), details={
                        "impersonator_realm": impersonator.realm.name, "impersonator": impersonator.username,
                        "impersonator_id": impersonator.pk})
    return user_session


def set_session_cookie(response, request, user_session):
    return sso_cookie.set_cookie(response, request, user_session.realm, user_session)
