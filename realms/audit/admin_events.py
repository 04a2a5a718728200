"""The one builder of admin events (Keycloak's AdminEvent): operation type (CREATE, UPDATE,
DELETE, ACTION), resource type, resource path (relative to the realm), representation and the
auth details of who did it (realm, client, user, address). The console, the Admin REST API and
realm import all record through ``record``, in the caller's transaction (``events.emit``), so a
webhook or an audit query sees the same shape whichever way a change was made."""
import json
from dataclasses import dataclass

from django.core.serializers.json import DjangoJSONEncoder

from ..http.web import client_address
from ..models import Event
from .events import emit_many

# Keycloak's admin console client: the auth details' client of changes made in the console.
CONSOLE_CLIENT = "security-admin-console"

# The keys of representations and JSON settings that hold a secret, at any depth: Keycloak's
# StripSecretsUtils (client secret and rotated secret, SMTP password and token secret, user
# credentials, identity provider clientSecret, the secret-typed config of LDAP and key provider
# components) plus registrationAccessToken and the SAML private keys of a Keycloak import. Exact
# names, so settings merely named like secrets (resetPasswordAllowed, passwordPolicy) stay
# visible. Admin events mask them; webhook fat payloads (webhooks.snapshots) drop them.
SECRET_KEYS = frozenset({
    "secret", "registrationAccessToken", "client.secret.rotated",  # client
    "saml.signing.private.key", "saml.encryption.private.key",  # SAML client attributes of a Keycloak import
    "password", "authTokenClientSecret",  # the realm's smtpServer
    "credentials",  # user (password hashes, OTP seeds)
    "clientSecret",  # identity provider config
    "bindCredential",  # LDAP user storage component config
    # key provider component config (hmac/aes-generated, rsa, ecdsa, eddsa, java-keystore)
    "privateKey", "ecdsaPrivateKey", "eddsaPrivateKey", "keystorePassword", "keyPassword",
})
# Model fields that hold secrets at rest: never part of a representation.
_SECRET_FIELDS = {"secret_encrypted", "secret_digest", "registration_access_token",
                  "private_key_encrypted", "secret_data", "credential_data"}


def _mask(value):
    if isinstance(value, dict):
        return {k: "**********" if k in SECRET_KEYS else _mask(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask(v) for v in value]
    return value


def model_representation(obj):
    """The object's fields (no secrets) and many-to-many ids, as JSON."""
    data = {f.name: _mask(f.value_from_object(obj)) for f in obj._meta.concrete_fields
            if f.name not in _SECRET_FIELDS}
    if obj.pk:
        for f in obj._meta.many_to_many:
            if f.remote_field.through._meta.auto_created:
                data[f.name] = sorted(str(pk) for pk in getattr(obj, f.name).values_list("pk", flat=True))
    return json.dumps(data, cls=DjangoJSONEncoder, sort_keys=True)


@dataclass(frozen=True)
class AuthDetails:
    """Who made a change. Empty for changes with no caller (a command-line import)."""

    realm_id: str = ""
    client_id: str = ""
    user_id: str = ""
    ip_address: str = ""


def auth_details(request, user, client_id) -> AuthDetails:
    """The caller of ``request``: ``user`` (a realm User) through ``client_id``."""
    return AuthDetails(realm_id=user.realm_id, client_id=client_id, user_id=user.pk, ip_address=client_address(request))


def console_auth(request) -> AuthDetails:
    return auth_details(request, request.user, CONSOLE_CLIENT)


def enabled_change(before, after):
    """Keycloak's details of a user update that switched ``enabled`` (None when it did not): what
    the Shared Signals transmitter turns into RISC account-disabled / account-enabled."""
    if before == after:
        return None
    return {"previous_enabled": str(before).lower(), "updated_enabled": str(after).lower()}


def ended_session(user_session):
    """Details of a session an admin ended: whose it was (the event's own user is the admin), for
    the Shared Signals transmitter's CAEP session-revoked."""
    return {"user_id": user_session.user_id}


def record(realm, operation, resource_type, resource_path, *, auth=None, representation=None, details=None):
    """Write the admin event (stored when the realm saves admin events; the ``realm_event``
    signal always). ``representation`` (a JSON string, a JSON-able value, or a callable giving
    one, called only when needed) is kept only when the realm asks for it (Include
    representation) and never for a DELETE; it must hold no secrets."""
    return record_many(realm, [(operation, resource_type, resource_path, representation)], auth=auth,
                       details=details)[0]


def record_many(realm, changes, *, auth=None, details=None):
    """``record`` of each ``(operation, resource type, resource path, representation)`` of
    ``changes`` by the same caller, stored together (a partial import's event per resource)."""
    auth = auth or AuthDetails()
    with_rep = realm.admin_events_details_enabled
    details = {**({"authRealmId": auth.realm_id} if auth.realm_id else {}), **(details or {})}
    items = []
    for operation, resource_type, resource_path, representation in changes:
        rep = ""
        if representation is not None and with_rep and operation != "DELETE":
            value = representation() if callable(representation) else representation
            rep = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
        items.append(dict(type=operation, kind=Event.ADMIN, resource_type=resource_type, resource_path=resource_path,
                          representation=rep, client_id=auth.client_id, user_id=auth.user_id,
                          ip_address=auth.ip_address, details=dict(details)))
    return emit_many(realm, items)
