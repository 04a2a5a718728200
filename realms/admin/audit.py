"""Keycloak-style admin events for what the console changes, recorded through
``realms.audit.admin_events.record`` inside the same transaction."""
from django.db.models import F

from ..audit.admin_events import console_auth, model_representation, record
from ..models import (
    AuthenticationExecution,
    AuthenticationFlow,
    AuthenticatorConfig,
    Client,
    ClientScope,
    ClientScopeLink,
    Credential,
    Group,
    Organization,
    OrganizationDomain,
    OrganizationMember,
    ProtocolMapper,
    Realm,
    RealmDefaultClientScope,
    RealmKey,
    RequiredActionProvider,
    Role,
    User,
)
from .switcher import realm_of


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
    if isinstance(obj, AuthenticationFlow):
        return "AUTH_FLOW", f"authentication/flows/{obj.pk}"
    if isinstance(obj, AuthenticationExecution):
        return "AUTH_EXECUTION", f"authentication/executions/{obj.pk}"
    if isinstance(obj, AuthenticatorConfig):
        return "AUTHENTICATOR_CONFIG", f"authentication/config/{obj.pk}"
    if isinstance(obj, RequiredActionProvider):
        return "REQUIRED_ACTION", f"authentication/required-actions/{obj.alias}"
    if isinstance(obj, Organization):
        return "ORGANIZATION", f"organizations/{obj.pk}"
    if isinstance(obj, OrganizationDomain):  # a domain is part of its organization's representation
        return "ORGANIZATION", f"organizations/{obj.organization_id}"
    if isinstance(obj, OrganizationMember):
        return "ORGANIZATION_MEMBERSHIP", f"organizations/{obj.organization_id}/members/{obj.user_id}"
    raise TypeError(f"no admin resource type for {type(obj).__name__}")


def owning_realm(obj):
    if isinstance(obj, ProtocolMapper):
        return (obj.client or obj.client_scope).realm
    if isinstance(obj, ClientScopeLink):
        return obj.client.realm
    if isinstance(obj, Credential | OrganizationMember):
        return obj.user.realm
    return realm_of(obj) or obj.realm


def admin_event(request, realm, operation, resource_type, resource_path, obj=None, details=None):
    """Record one admin operation (CREATE, UPDATE, DELETE, ACTION) done by the signed-in admin."""
    return record(realm, operation, resource_type, resource_path, auth=console_auth(request),
                  representation=None if obj is None else (lambda: model_representation(obj)), details=details)


def object_event(request, operation, obj, details=None):
    resource_type, resource_path = resource_of(obj)
    return admin_event(request, owning_realm(obj), operation, resource_type, resource_path,
                       None if operation == "DELETE" else obj, details)


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
