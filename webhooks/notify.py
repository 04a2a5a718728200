"""Telling a realm's admins that an endpoint was disabled: an admin event (through
``realms.audit.admin_events.record``, so it is stored when admin events are on) and, when the realm has an SMTP
server configured, an email to its administrators after the commit."""
import logging

from django.core.mail import EmailMessage
from django.db import transaction

from realms.audit.admin_events import record
from realms.http import email
from realms.http.outbound import TargetRefused
from realms.models import User, client_role_names, effective_roles, realm_role_names

logger = logging.getLogger("idp.webhooks")

RESOURCE_TYPE = "WEBHOOK_ENDPOINT"


def endpoint_disabled(endpoint, reason):
    realm = endpoint.realm
    record(realm, "UPDATE", RESOURCE_TYPE, f"webhooks/{endpoint.pk}", details={"enabled": False, "reason": reason})
    if (realm.smtp_server or {}).get("host"):
        transaction.on_commit(lambda: _email(realm, endpoint, reason))


def admin_emails(realm):
    """Master-realm admins, and the realm's own users holding realm-management's realm-admin."""
    emails = []
    for user in User.objects.filter(realm__name="master", enabled=True).exclude(email=""):
        if "admin" in realm_role_names(effective_roles(user)):
            emails.append(user.email)
    if not realm.is_master:
        for user in User.objects.filter(realm=realm, enabled=True).exclude(email=""):
            if "realm-admin" in client_role_names(effective_roles(user)).get("realm-management", []):
                emails.append(user.email)
    return sorted(set(emails))


def _email(realm, endpoint, reason):
    recipients = admin_emails(realm)
    if not recipients:
        return
    smtp = realm.smtp_server
    message = EmailMessage(
        subject=f"Webhook endpoint disabled in realm {realm.name}",
        body=(f"The webhook endpoint {endpoint.url} (id {endpoint.pk}) of realm {realm.name} was disabled:\n"
              f"{reason}.\n\nEvents for it are kept in the delivery log; enable the endpoint and redeliver "
              "them from the admin console or the admin REST API once it answers again.\n"),
        # The realm's server through the outbound policy, as every e-mail of the realm.
        from_email=smtp.get("from") or None, to=recipients, connection=email.connection(smtp),
    )
    try:
        message.send()
    except (OSError, TargetRefused) as exc:
        logger.warning("webhooks: could not email the admins of realm %s: %s", realm.name, exc)
