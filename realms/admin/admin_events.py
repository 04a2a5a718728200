"""Keycloak-style admin events for what the console changes, recorded through
``realms.events.emit`` inside the same transaction."""
import json

from django.core.serializers.json import DjangoJSONEncoder
from django.db.models import F

from ..events import emit
from ..models import (
    Client,
    ClientScope,
    ClientScopeLink,
    Credential,
    Event,
    Group,
    ProtocolMapper,
    Realm,
    RealmDefaultClientScope,
    RealmKey,
    Role,
    User,
)
from .switcher import realm_of

# Values under these keys of JSON settings are masked in event representations (SMTP password,
# rotated client secrets), the way Keycloak strips secrets from what it records.
_SECRET_WORDS = ("password", "secret", "credential")
# Model fields that hold secrets at rest: never part of a representation.
_SECRET_FIELDS = {"secret_encrypted", "secret_digest", "registration_access_token",
                  "private_key_encrypted", "secret_data", "credential_data"}


def _mask(value):
    if isinstance(value, dict):
        return {k: "**********" if any(w in k.lower() for w in _SECRET_WORDS) else _mask(v)
                for k, v in value.items()}
    return value


def representation(obj):
    """The object's fields (no secrets) and many-to-many ids, as JSON."""
    data = {f.name: _mask(f.value_from_object(obj)) for f in obj._meta.concrete_fields
            if f.name not in _SECRET_FIELDS}
    if obj.pk:
        for f in obj._meta.many_to_many:
            if f.remote_field.through._meta.auto_created:
                data[f.name] = sorted(str(pk) for pk in getattr(obj, f.name).values_list("pk", flat=True))
    return json.dumps(data, cls=DjangoJSONEncoder, sort_keys=True)


def resource_of(obj):
    """Keycloak's (resource type, resource path relative to the realm) for an object."""
    if isinstance(obj, Realm):
        return "REALM", ""
    if isinstance(obj, Client):
        return "CLIENT", f"clients/{obj.pk}"
    if isinstance(obj, User):
        return "USER", f"users/{obj.pk}"
    if isinstance(obj, Role):
        if obj.client_id:
            return "CLIENT_ROLE", f"clients/{obj.client_id}/roles/{obj.name}"
        return "REALM_ROLE", f"roles/{obj.name}"
    if isinstance(obj, Group):
        return "GROUP", f"groups/{obj.pk}"
    if isinstance(obj, ClientScope):
        return "CLIENT_SCOPE", f"client-scopes/{obj.pk}"
    if isinstance(obj, RealmKey):
        return "COMPONENT", f"components/{obj.pk}"
    if isinstance(obj, ProtocolMapper):
        owner = f"clients/{obj.client_id}" if obj.client_id else f"client-scopes/{obj.client_scope_id}"
        return "PROTOCOL_MAPPER", f"{owner}/protocol-mappers/models/{obj.pk}"
    if isinstance(obj, ClientScopeLink):
        kind = "default" if obj.default else "optional"
        return "CLIENT_SCOPE_CLIENT_MAPPING", f"clients/{obj.client_id}/{kind}-client-scopes/{obj.client_scope_id}"
    if isinstance(obj, RealmDefaultClientScope):
        kind = "default" if obj.default else "optional"
        return "CLIENT_SCOPE", f"default-{kind}-client-scopes/{obj.client_scope_id}"
    if isinstance(obj, Credential):
        return "USER", f"users/{obj.user_id}/credentials/{obj.pk}"
    raise TypeError(f"no admin resource type for {type(obj).__name__}")


def owning_realm(obj):
    if isinstance(obj, ProtocolMapper):
        return (obj.client or obj.client_scope).realm
    if isinstance(obj, ClientScopeLink):
        return obj.client.realm
    if isinstance(obj, Credential):
        return obj.user.realm
    return realm_of(obj) or obj.realm


def admin_event(request, realm, operation, resource_type, resource_path, obj=None):
    """Record one admin operation (CREATE, UPDATE, DELETE, ACTION) done by the signed-in admin.
    The representation is included only when the realm asks for it (Include representation)."""
    rep = representation(obj) if obj is not None and realm.admin_events_details_enabled else ""
    return emit(
        realm, operation, kind=Event.ADMIN, resource_type=resource_type, resource_path=resource_path,
        representation=rep, user_id=request.user.pk, ip_address=request.META.get("REMOTE_ADDR", ""),
        details={"authRealmId": request.user.realm_id},
    )


def object_event(request, operation, obj):
    resource_type, resource_path = resource_of(obj)
    return admin_event(request, owning_realm(obj), operation, resource_type, resource_path,
                       None if operation == "DELETE" else obj)


def role_mapping_events(request, realm, owner_path, before, after):
    """CREATE/DELETE of realm- and client-role mappings, as Keycloak records them."""
    for operation, changed in (("CREATE", after - before), ("DELETE", before - after)):
        for role in Role.objects.filter(pk__in=changed).order_by(F("client_id").asc(nulls_first=True), "name"):
            if role.client_id:
                admin_event(request, realm, operation, "CLIENT_ROLE_MAPPING",
                            f"{owner_path}/role-mappings/clients/{role.client_id}")
            else:
                admin_event(request, realm, operation, "REALM_ROLE_MAPPING", f"{owner_path}/role-mappings/realm")


def role_ids(obj):
    return set(obj.roles.values_list("pk", flat=True)) if obj.pk else set()
