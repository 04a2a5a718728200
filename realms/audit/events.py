"""Realm events: written once, in the transaction of the change they record.

``emit`` stores the event when the realm's Save events is on (with its expiration) and always
sends the ``realm_event`` signal inside the same transaction; listeners (webhooks' outbox,
logging) write their own rows there too, so either all of it commits or none of it does."""
import logging
from datetime import timedelta

from django.dispatch import Signal
from django.utils import timezone

from ..data import rows
from ..models import Event

logger = logging.getLogger("idp.events")

# The realm's eventsListeners this server has: Keycloak's "jboss-logging" is the logger above.
# (Storing events is Save events; webhooks subscribe on their own, as no realm listener.)
LOGGING_LISTENER = "jboss-logging"
EVENT_LISTENERS = (LOGGING_LISTENER,)

# Keycloak keeps admin events apart from user events: this realm attribute, seconds, unset = keep
# (user events: the realm's eventsExpiration). Expired events go in ``realms.purges``.
ADMIN_EVENTS_EXPIRATION = "adminEventsExpiration"

# Sent with event=<Event, saved or not>; receivers run inside the caller's transaction.
realm_event = Signal()


def emit(realm, type, *, kind=Event.USER, client_id="", user_id="", session_id="", ip_address="",
         error="", details=None, resource_type="", resource_path="", representation=""):
    return emit_many(realm, [dict(type=type, kind=kind, client_id=client_id, user_id=user_id, session_id=session_id,
                                  ip_address=ip_address, error=error, details=details, resource_type=resource_type,
                                  resource_path=resource_path, representation=representation)])[0]


def emit_many(realm, items):
    """``emit`` for each of ``items`` (its keyword arguments), the stored ones written together:
    a partial import records an admin event per resource, which may be 100,000 of them."""
    now = timezone.now()
    expires_at = {Event.USER: _expiry(now, realm.events_expiration),
                  Event.ADMIN: _expiry(now, (realm.attributes or {}).get(ADMIN_EVENTS_EXPIRATION))}
    events, stored = [], []
    for item in items:
        kind, type = item.get("kind", Event.USER), item["type"]
        event = Event(
            realm=realm, kind=kind, type=type, time=now, client_id=item.get("client_id") or "",
            user_id=item.get("user_id") or "", session_id=item.get("session_id") or "",
            ip_address=item.get("ip_address") or "", error=item.get("error") or "", details=item.get("details") or {},
            resource_type=item.get("resource_type", ""), resource_path=item.get("resource_path", ""),
            representation=item.get("representation", ""),
        )
        save = realm.admin_events_enabled if kind == Event.ADMIN else realm.events_enabled
        if save and (kind == Event.ADMIN or not realm.enabled_event_types or type in realm.enabled_event_types):
            event.expires_at = expires_at[kind]
            stored.append(event)
        events.append(event)
    if len(stored) == 1:
        rows.insert(stored[0])  # no receiver watches Event's saves; inside a write batch it waits for the others
    else:
        rows.insert_many(Event, stored)
    logs = LOGGING_LISTENER in (realm.events_listeners or ())
    for event in events:
        if event.error and logs:
            # Errors are logged even when not stored (Keycloak's jboss-logging does the same); never secrets.
            logger.warning("event %s realm=%s client=%s user=%s error=%s", event.type, realm.name, event.client_id,
                           event.user_id, event.error)
        realm_event.send(sender=Event, event=event)
    return events


def _expiry(now, seconds):
    try:
        seconds = int(seconds or 0)
    except (TypeError, ValueError):
        return None
    return now + timedelta(seconds=seconds) if seconds > 0 else None


# Keycloak's user event types (its EventType enum), offered where a realm or a subscriber picks
# which events it wants.
USER_EVENT_TYPES = [
    "LOGIN", "LOGIN_ERROR", "REGISTER", "REGISTER_ERROR", "LOGOUT", "LOGOUT_ERROR",
    "CODE_TO_TOKEN", "CODE_TO_TOKEN_ERROR", "CLIENT_LOGIN", "CLIENT_LOGIN_ERROR",
    "REFRESH_TOKEN", "REFRESH_TOKEN_ERROR", "INTROSPECT_TOKEN", "INTROSPECT_TOKEN_ERROR",
    "FEDERATED_IDENTITY_LINK", "FEDERATED_IDENTITY_LINK_ERROR", "REMOVE_FEDERATED_IDENTITY",
    "REMOVE_FEDERATED_IDENTITY_ERROR", "UPDATE_EMAIL", "UPDATE_EMAIL_ERROR", "UPDATE_PROFILE",
    "UPDATE_PROFILE_ERROR", "UPDATE_PASSWORD", "UPDATE_PASSWORD_ERROR", "UPDATE_TOTP", "UPDATE_TOTP_ERROR",
    "UPDATE_CREDENTIAL", "UPDATE_CREDENTIAL_ERROR", "VERIFY_EMAIL", "VERIFY_EMAIL_ERROR",
    "VERIFY_PROFILE", "VERIFY_PROFILE_ERROR", "REMOVE_TOTP", "REMOVE_TOTP_ERROR",
    "REMOVE_CREDENTIAL", "REMOVE_CREDENTIAL_ERROR", "GRANT_CONSENT", "GRANT_CONSENT_ERROR",
    "UPDATE_CONSENT", "UPDATE_CONSENT_ERROR", "REVOKE_GRANT", "REVOKE_GRANT_ERROR",
    "SEND_VERIFY_EMAIL", "SEND_VERIFY_EMAIL_ERROR", "SEND_RESET_PASSWORD", "SEND_RESET_PASSWORD_ERROR",
    "SEND_IDENTITY_PROVIDER_LINK", "SEND_IDENTITY_PROVIDER_LINK_ERROR", "RESET_PASSWORD", "RESET_PASSWORD_ERROR",
    "RESTART_AUTHENTICATION", "RESTART_AUTHENTICATION_ERROR", "INVALID_SIGNATURE", "INVALID_SIGNATURE_ERROR",
    "REGISTER_NODE", "REGISTER_NODE_ERROR", "UNREGISTER_NODE", "UNREGISTER_NODE_ERROR",
    "USER_INFO_REQUEST", "USER_INFO_REQUEST_ERROR", "IDENTITY_PROVIDER_LINK_ACCOUNT",
    "IDENTITY_PROVIDER_LINK_ACCOUNT_ERROR", "IDENTITY_PROVIDER_LOGIN", "IDENTITY_PROVIDER_LOGIN_ERROR",
    "IDENTITY_PROVIDER_FIRST_LOGIN", "IDENTITY_PROVIDER_FIRST_LOGIN_ERROR",
    "IDENTITY_PROVIDER_POST_LOGIN", "IDENTITY_PROVIDER_POST_LOGIN_ERROR",
    "IDENTITY_PROVIDER_RESPONSE", "IDENTITY_PROVIDER_RESPONSE_ERROR",
    "IDENTITY_PROVIDER_RETRIEVE_TOKEN", "IDENTITY_PROVIDER_RETRIEVE_TOKEN_ERROR",
    "IMPERSONATE", "IMPERSONATE_ERROR", "CUSTOM_REQUIRED_ACTION", "CUSTOM_REQUIRED_ACTION_ERROR",
    "EXECUTE_ACTIONS", "EXECUTE_ACTIONS_ERROR", "EXECUTE_ACTION_TOKEN", "EXECUTE_ACTION_TOKEN_ERROR",
    "CLIENT_INFO", "CLIENT_INFO_ERROR", "CLIENT_REGISTER", "CLIENT_REGISTER_ERROR",
    "CLIENT_UPDATE", "CLIENT_UPDATE_ERROR", "CLIENT_DELETE", "CLIENT_DELETE_ERROR",
    "CLIENT_INITIATED_ACCOUNT_LINKING", "CLIENT_INITIATED_ACCOUNT_LINKING_ERROR",
    "TOKEN_EXCHANGE", "TOKEN_EXCHANGE_ERROR", "OAUTH2_DEVICE_AUTH", "OAUTH2_DEVICE_AUTH_ERROR",
    "OAUTH2_DEVICE_VERIFY_USER_CODE", "OAUTH2_DEVICE_VERIFY_USER_CODE_ERROR",
    "OAUTH2_DEVICE_CODE_TO_TOKEN", "OAUTH2_DEVICE_CODE_TO_TOKEN_ERROR",
    "AUTHREQID_TO_TOKEN", "AUTHREQID_TO_TOKEN_ERROR", "PERMISSION_TOKEN", "PERMISSION_TOKEN_ERROR",
    "DELETE_ACCOUNT", "DELETE_ACCOUNT_ERROR", "PUSHED_AUTHORIZATION_REQUEST",
    "PUSHED_AUTHORIZATION_REQUEST_ERROR", "USER_DISABLED_BY_PERMANENT_LOCKOUT",
    "USER_DISABLED_BY_TEMPORARY_LOCKOUT", "OAUTH2_EXTENSION_GRANT", "OAUTH2_EXTENSION_GRANT_ERROR",
    "FEDERATED_IDENTITY_OVERRIDE_LINK", "FEDERATED_IDENTITY_OVERRIDE_LINK_ERROR",
    "INVITE_ORG", "INVITE_ORG_ERROR", "USER_SESSION_DELETED", "USER_SESSION_DELETED_ERROR",
]
