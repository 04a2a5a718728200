"""Which realm events become which Security Event Tokens, and the SETs themselves.

A listener of ``realm_event`` (the one event bus; the webhook outbox listens beside it): in the
transaction of the change, each stream of the realm that delivers the event's type and covers its
user gets one outbox message whose body is the SET, rendered and signed by the ``secevent``
envelope registered with ``webhooks.payloads``. The SET's ``jti`` is the message id (the
``webhook-id`` of a push, the key of a poll's ``sets``)."""
import re
from datetime import UTC, datetime

from django.db.models.signals import post_delete
from django.urls import reverse

from realms import features
from realms.audit.events import realm_event
from realms.models import ClientScope, Event, RealmDefaultClientScope, User
from webhooks import payloads
from webhooks.models import Delivery, Endpoint
from webhooks.outbox import publish
from webhooks.services import WebhookError

from .. import jose, tokens
from ..realm_cache import get_realm
from .models import SsfStream

CAEP = "https://schemas.openid.net/secevent/caep/event-type/"
RISC = "https://schemas.openid.net/secevent/risc/event-type/"
SESSION_REVOKED = CAEP + "session-revoked"
CREDENTIAL_CHANGE = CAEP + "credential-change"
ACCOUNT_DISABLED = RISC + "account-disabled"
ACCOUNT_ENABLED = RISC + "account-enabled"
VERIFICATION = "https://schemas.openid.net/secevent/ssf/event-type/verification"
SUPPORTED = [SESSION_REVOKED, CREDENTIAL_CHANGE, ACCOUNT_DISABLED, ACCOUNT_ENABLED]

ENVELOPE = "secevent"
SECEVENT_JWT = "application/secevent+jwt"
TYP = "secevent+jwt"  # SSF 1.0 §4.1.1: explicit typing

TRANSMITTER_ENABLED = "ssf.transmitterEnabled"  # realm attribute
RECEIVER_ENABLED = "ssf.enabled"  # client attribute: the client is a receiver
DEFAULT_SUBJECTS = "ssf.defaultSubjects"  # client attribute, or the realm's for every receiver: ALL | NONE
SUBJECT_FORMAT = "ssf.userSubjectFormat"  # client attribute: iss_sub (default) | email
AUDIENCE = "ssf.streamAudience"  # client attribute: the SETs' aud instead of <clientId>/<streamId>
SIGNATURE_ALGORITHM = "ssf.signatureAlgorithm"  # client attribute: else the realm's default algorithm
SUBJECT_FORMATS = ("iss_sub", "email")

# An outbox delivery that waits: a poll stream's SET until the receiver takes it, a paused
# stream's until it is enabled again. Never due, so neither the workers nor the sweeper send it.
HELD_UNTIL = datetime(9000, 1, 1, tzinfo=UTC)

# Keycloak's credential types as CAEP names them (CAEP 1.0 §3.3); others pass unchanged, as Keycloak's.
_CAEP_CREDENTIAL = {"password": "password", "otp": "app", "webauthn": "fido2-roaming",
                    "webauthn-passwordless": "fido2-platform"}
_USER_PATH = re.compile(r"^users/([^/]+)$")
_ADMIN_ACTION = re.compile(r"^users/([^/]+)/(reset-password|logout)$")


def transmitter_enabled(realm):
    """The server feature ``ssf`` (experimental, off unless enabled, as Keycloak's) and the realm's switch."""
    return features.enabled("ssf") and (realm.attributes or {}).get(TRANSMITTER_ENABLED) == "true"


def receiver_enabled(client):
    return (client.attributes or {}).get(RECEIVER_ENABLED) == "true"


def default_subjects(realm, client=None):
    value = ((client.attributes or {}).get(DEFAULT_SUBJECTS) if client else None) \
        or (realm.attributes or {}).get(DEFAULT_SUBJECTS) or "ALL"
    return "NONE" if value.upper() == "NONE" else "ALL"


def _credential_change(event, credential_type, change_type):
    """A user's own change (the Admin API's reset-password is the admin's, below)."""
    return [(CREDENTIAL_CHANGE, event.user_id, None, {
        "credential_type": _CAEP_CREDENTIAL.get(credential_type, credential_type), "change_type": change_type,
        "initiating_entity": "user"})]


def signals(event):
    """[(event type URI, user id, session id or None, event members)] that a realm Event means."""
    if event.error:
        return []
    if event.kind == Event.ADMIN:
        return _admin_signals(event)
    details = event.details or {}
    if event.type == "LOGOUT" and event.user_id:
        return [(SESSION_REVOKED, event.user_id, event.session_id or details.get("session") or None,
                 {"initiating_entity": "user", "reason_admin": {"en": "User logout"}})]
    if event.type == "UPDATE_PASSWORD":
        return _credential_change(event, "password", "update")
    if event.type in ("UPDATE_TOTP", "UPDATE_CREDENTIAL"):
        return _credential_change(event, details.get("credential_type", "otp"), "create")
    if event.type == "REMOVE_CREDENTIAL":  # REMOVE_TOTP comes with it: one signal
        return _credential_change(event, details.get("credential_type", ""), "delete")
    return []


def _admin_signals(event):
    path, details = event.resource_path or "", event.details or {}
    if event.resource_type == "USER_SESSION" and event.type == "DELETE" and details.get("user_id"):
        return [(SESSION_REVOKED, details["user_id"], path.rsplit("/", 1)[-1],
                 {"initiating_entity": "admin", "reason_admin": {"en": "Session removed by an admin"}})]
    if event.resource_type != "USER":
        return []
    action = _ADMIN_ACTION.match(path)
    if event.type == "ACTION" and action:
        user_id, what = action.groups()
        if what == "logout":  # every session of the user, named "ALL" as Keycloak does
            return [(SESSION_REVOKED, user_id, "ALL", {"initiating_entity": "admin",
                                                        "reason_admin": {"en": "logout_all_user_sessions"}})]
        return [(CREDENTIAL_CHANGE, user_id, None, {"credential_type": "password", "change_type": "update",
                                                     "initiating_entity": "admin"})]
    user = _USER_PATH.match(path)
    if event.type == "UPDATE" and user and details.get("previous_enabled") != details.get("updated_enabled"):
        kind = ACCOUNT_ENABLED if details.get("updated_enabled") == "true" else ACCOUNT_DISABLED
        return [(kind, user.group(1), None, {})]
    return []


def _matches(subject, issuer, user_id, email):
    fmt = subject.get("format")
    if fmt == "complex":
        inner = subject.get("user")
        return isinstance(inner, dict) and _matches(inner, issuer, user_id, email)
    if fmt == "iss_sub":
        return subject.get("iss") == issuer and subject.get("sub") == user_id
    if fmt == "opaque":
        return subject.get("id") == user_id
    if fmt == "email":
        return bool(email) and str(subject.get("email", "")).lower() == email.lower()
    return False


def covers(stream, user_id, email):
    """SSF 1.0 §8.1.3: the last subject rule naming the user decides; with none, the receiver's
    default subjects (ALL or NONE)."""
    included = default_subjects(stream.realm, stream.client) == "ALL"
    for rule in stream.subjects:
        if _matches(rule["subject"], stream.issuer, user_id, email):
            included = rule["included"]
    return included


def user_subject(stream, user_id, email):
    """The user's ``sub_id`` in the receiver's format: ``email`` when asked and known, else
    ``iss_sub`` (Keycloak falls back the same way rather than drop the signal)."""
    if (stream.client.attributes or {}).get(SUBJECT_FORMAT) == "email" and email:
        return {"format": "email", "email": email}
    return {"format": "iss_sub", "iss": stream.issuer, "sub": user_id}


def write_set(stream, event_type, sub_id, members, occurred_at, source_event_id=""):
    """One SET for ``stream`` into the outbox (this transaction); held unless a pushed, enabled
    stream. The claims wait in the message's data; the envelope signs them."""
    claims = {"iss": stream.issuer, "aud": stream.audience, "sub_id": sub_id,
              "events": {event_type: {**members, "event_timestamp": int(occurred_at.timestamp())}}}
    alg = (stream.client.attributes or {}).get(SIGNATURE_ALGORITHM) or stream.realm.default_signature_algorithm
    message = publish(stream.realm, "ssf." + event_type.rsplit("/", 1)[-1],
                      {"realm": stream.realm.name, "stream": stream.id, "alg": alg, "claims": claims},
                      endpoints=[stream.endpoint], occurred_at=occurred_at, source_event_id=source_event_id)
    if stream.polled or stream.status == SsfStream.PAUSED:
        Delivery.objects.filter(message=message).update(next_attempt_at=HELD_UNTIL, dispatched_at=None)
    return message


SCOPES = {"ssf.read": "Read the receiver's Shared Signals stream and poll its events",
          "ssf.manage": "Manage the receiver's Shared Signals stream"}


def ensure_scopes(realm):
    """Keycloak's ``ssf.read`` and ``ssf.manage`` client scopes, made when a realm becomes a
    transmitter and they are missing (keycloak#49236): realm optional scopes, so a receiver asks
    for them explicitly."""
    for name, description in SCOPES.items():
        scope, created = ClientScope.objects.get_or_create(realm=realm, name=name, defaults={
            "description": description, "protocol": "openid-connect",
            "attributes": {"include.in.token.scope": "true", "display.on.consent.screen": "false"}})
        if created:
            RealmDefaultClientScope.objects.get_or_create(realm=realm, client_scope=scope, defaults={"default": False})


def on_realm_event(sender, event, **kwargs):
    if not transmitter_enabled(event.realm):
        return
    if event.kind == Event.ADMIN and event.resource_type == "REALM" and event.type in ("CREATE", "UPDATE"):
        ensure_scopes(event.realm)
        return
    found = signals(event)
    if not found:
        return
    streams = [s for s in SsfStream.objects.filter(realm=event.realm).exclude(status=SsfStream.DISABLED)
               .select_related("client", "endpoint", "realm") if receiver_enabled(s.client)]
    if not streams:
        return
    for event_type, user_id, session_id, members in found:
        user = User.objects.filter(realm=event.realm, pk=user_id).values("email").first()
        email = (user or {}).get("email") or ""
        for stream in streams:
            if event_type not in delivered(stream) or not covers(stream, user_id, email):
                continue
            sub_id = user_subject(stream, user_id, email)
            if session_id:
                sub_id = {"format": "complex", "user": sub_id, "session": {"format": "opaque", "id": session_id}}
            write_set(stream, event_type, sub_id, members, event.time, event.id or "")


def delivered(stream):
    """``events_delivered``: what the receiver asked for and this transmitter sends."""
    return [t for t in SUPPORTED if t in stream.events_requested]


def render(*, message_id, source, event_type, occurred_at, data):
    """The ``secevent`` envelope: the SET signed with the realm's active key for the stream's
    algorithm, ``jti`` the message id. Nothing else may travel on a stream's endpoint (the
    webhook console's test event would be no SET): refused as the webhook surfaces refuse input."""
    if "claims" not in data:
        raise WebhookError("An SSF stream's endpoint carries only the stream's Security Event Tokens")
    realm = get_realm(data["realm"]).realm
    claims = {**data["claims"], "jti": message_id, "iat": int(occurred_at.timestamp())}
    alg = data["alg"]
    kid, key = tokens.signer(realm, alg)
    return jose.sign(claims, alg=alg, key=key, kid=kid, typ=TYP)


def _drop_endpoint(sender, instance, **kwargs):
    """A stream gone with its client (deleted, or overwritten by a partial import) takes its
    webhook endpoint along, which would otherwise stay in the realm's list carrying nothing."""
    Endpoint.objects.filter(pk=instance.endpoint_id).delete()


def owner(endpoint):
    """What the webhook console and API name as managing a stream's endpoint, and a link to it:
    the receiver client's page, where its Shared Signals settings are."""
    stream = SsfStream.objects.filter(endpoint=endpoint).select_related("client").first()
    if stream is None:  # the stream is being deleted with its endpoint
        return "a Shared Signals stream", ""
    return (f"the Shared Signals stream of client {stream.client.client_id} (managed through the SSF stream API)",
            reverse("admin:realms_client_change", args=[stream.client_id]) + "#advanced")  # its SSF settings' tab


def register():
    """From ``OidcConfig.ready``: the SET envelope and the listeners."""
    payloads.register_envelope(ENVELOPE, SECEVENT_JWT, render, owner)
    realm_event.connect(on_realm_event, sender=Event, dispatch_uid="oidc.ssf")
    post_delete.connect(_drop_endpoint, sender=SsfStream, dispatch_uid="oidc.ssf.endpoint")
