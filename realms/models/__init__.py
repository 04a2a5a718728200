"""The tenant model and everything a realm owns.

Every name (username, clientId, role name, scope name, group name among siblings) is unique
within its realm, never globally. Primary keys are strings so that Keycloak's ids survive an
import and an export unchanged, which keeps cross-references (role ``containerId``, group
``parentId``) intact."""
from .authz import PermissionTicket
from .brokering import FederatedIdentity, IdentityProvider, IdentityProviderMapper, OrganizationIdentityProvider
from .clients import Client, ClientScope, ClientScopeLink, ProtocolMapper, RealmDefaultClientScope
from .fields import IdentityProviderConfigField, IdField, SmtpServerField, new_id
from .flows import AuthenticationExecution, AuthenticationFlow, AuthenticatorConfig, RequiredActionProvider
from .jobs import ConsoleJob
from .organizations import Organization, OrganizationDomain, OrganizationMember
from .realm import Component, Realm, RealmKey, RealmOwned
from .roles import Group, Role
from .sessions import ClientSession, Event, UserSession
from .users import (
    Credential,
    User,
    UserManager,
    client_role_names,
    effective_role_ids,
    effective_role_ids_column,
    effective_role_ids_read,
    effective_roles,
    effective_roles_in,
    expand_composites,
    group_with_ancestors,
    has_realm_role,
    realm_role_names,
    roles_by_id,
)

# The models and the role graph, where Django looks for the models and migrations name their fields.
__all__ = [
    "PermissionTicket",
    "FederatedIdentity",
    "IdentityProvider",
    "IdentityProviderMapper",
    "OrganizationIdentityProvider",
    "Client",
    "ClientScope",
    "ClientScopeLink",
    "ProtocolMapper",
    "RealmDefaultClientScope",
    "IdField",
    "IdentityProviderConfigField",
    "SmtpServerField",
    "new_id",
    "AuthenticationExecution",
    "AuthenticationFlow",
    "AuthenticatorConfig",
    "RequiredActionProvider",
    "ConsoleJob",
    "Organization",
    "OrganizationDomain",
    "OrganizationMember",
    "Component",
    "Realm",
    "RealmKey",
    "RealmOwned",
    "Group",
    "Role",
    "ClientSession",
    "Event",
    "UserSession",
    "Credential",
    "User",
    "UserManager",
    "client_role_names",
    "effective_role_ids",
    "effective_role_ids_read",
    "effective_role_ids_column",
    "effective_roles",
    "effective_roles_in",
    "expand_composites",
    "group_with_ancestors",
    "has_realm_role",
    "realm_role_names",
    "roles_by_id",
]
