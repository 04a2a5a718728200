"""The realm resources of the Admin REST API, relative to ``/admin/realms/`` (registered with
``resources`` from ``RealmsConfig.ready()``; ``/admin/realms`` itself and ``/admin/serverinfo``
are mounted by ``idp/urls.py``)."""
from django.urls import path

from . import (
    attack_detection,
    authz,
    client_policies,
    client_scopes,
    clients,
    credentials,
    email,
    events,
    flows,
    groups,
    identity_providers,
    keys,
    organizations,
    partial,
    protocol_mappers,
    realms,
    role_mappings,
    roles,
    sessions,
    user_profile,
    users,
)

R = "<str:realm>"
urlpatterns = [
    path(R, realms.RealmDetail.as_view()),
    path(f"{R}/partialImport", partial.PartialImport.as_view()),
    path(f"{R}/partial-export", partial.PartialExport.as_view()),
    path(f"{R}/users", users.Users.as_view()),
    path(f"{R}/users/count", users.UserCount.as_view()),
    path(f"{R}/users/profile", user_profile.UserProfile.as_view()),
    path(f"{R}/users/profile/metadata", user_profile.UserProfileMetadata.as_view()),
    path(f"{R}/users/<str:user_id>", users.UserDetail.as_view()),
    path(f"{R}/users/<str:user_id>/reset-password", users.ResetPassword.as_view()),
    path(f"{R}/users/<str:user_id>/execute-actions-email", email.ExecuteActionsEmail.as_view()),
    path(f"{R}/users/<str:user_id>/send-verify-email", email.SendVerifyEmail.as_view()),
    path(f"{R}/testSMTPConnection", email.TestSmtpConnection.as_view()),
    path(f"{R}/users/<str:user_id>/groups", users.UserGroups.as_view()),
    path(f"{R}/users/<str:user_id>/groups/count", users.UserGroupCount.as_view()),
    path(f"{R}/users/<str:user_id>/groups/<str:group_id>", users.UserGroupMembership.as_view()),
    path(f"{R}/users/<str:user_id>/logout", users.Logout.as_view()),
    path(f"{R}/users/<str:user_id>/sessions", users.Sessions.as_view()),
    path(f"{R}/users/<str:user_id>/impersonation", users.Impersonation.as_view()),
    path(f"{R}/users/<str:user_id>/credentials", credentials.Credentials.as_view()),
    path(f"{R}/users/<str:user_id>/credentials/<str:credential_id>", credentials.CredentialDetail.as_view()),
    path(f"{R}/users/<str:user_id>/credentials/<str:credential_id>/userLabel", credentials.CredentialLabel.as_view()),
    path(f"{R}/users/<str:user_id>/credentials/<str:credential_id>/moveToFirst", credentials.CredentialMove.as_view()),
    path(f"{R}/users/<str:user_id>/credentials/<str:credential_id>/moveAfter/<str:previous_id>",
         credentials.CredentialMove.as_view()),
    path(f"{R}/users/<str:user_id>/disable-credential-types", credentials.DisableCredentialTypes.as_view()),
    path(f"{R}/users/<str:user_id>/configured-user-storage-credential-types",
         credentials.ConfiguredStorageTypes.as_view()),
    path(f"{R}/groups", groups.Groups.as_view()),
    path(f"{R}/groups/count", groups.GroupCount.as_view()),
    path(f"{R}/groups/<str:group_id>", groups.GroupDetail.as_view()),
    path(f"{R}/groups/<str:group_id>/children", groups.GroupChildren.as_view()),
    path(f"{R}/groups/<str:group_id>/members", groups.GroupMembers.as_view()),
    path(f"{R}/group-by-path/<path:group_path>", groups.GroupByPath.as_view()),
    path(f"{R}/clients", clients.Clients.as_view()),
    path(f"{R}/clients/<str:client_uuid>", clients.ClientDetail.as_view()),
    path(f"{R}/clients/<str:client_uuid>/client-secret", clients.ClientSecret.as_view()),
    path(f"{R}/clients/<str:client_uuid>/service-account-user", clients.ServiceAccountUser.as_view()),
    path(f"{R}/roles-by-id/<str:role_id>", roles.RoleById.as_view()),
    path(f"{R}/attack-detection/brute-force/users", attack_detection.AllLoginFailures.as_view()),
    path(f"{R}/attack-detection/brute-force/users/<str:user_id>", attack_detection.UserLoginFailure.as_view()),
    path(f"{R}/keys", keys.Keys.as_view()),
    path(f"{R}/client-policies/policies", client_policies.ClientPolicies.as_view()),
    path(f"{R}/client-policies/profiles", client_policies.ClientProfiles.as_view()),
    path(f"{R}/logout-all", sessions.LogoutAll.as_view()),
    path(f"{R}/sessions/<str:session_id>", sessions.SessionDetail.as_view()),
    path(f"{R}/clients/<str:client_uuid>/user-sessions", sessions.ClientUserSessions.as_view()),
    path(f"{R}/events", events.Events.as_view()),
    path(f"{R}/events/config", events.EventsConfig.as_view()),
    path(f"{R}/admin-events", events.AdminEvents.as_view()),
    path(f"{R}/client-scopes", client_scopes.ClientScopes.as_view()),
    path(f"{R}/client-scopes/<str:scope_id>", client_scopes.ClientScopeDetail.as_view()),
]
ORGS = f"{R}/organizations"
urlpatterns += [
    path(ORGS, organizations.Organizations.as_view()),
    path(f"{ORGS}/count", organizations.OrganizationCount.as_view()),
    path(f"{ORGS}/members/<str:member_id>/organizations", organizations.MemberOrganizations.as_view()),
    path(f"{ORGS}/<str:org_id>", organizations.OrganizationDetail.as_view()),
    path(f"{ORGS}/<str:org_id>/members", organizations.Members.as_view()),
    path(f"{ORGS}/<str:org_id>/members/count", organizations.MemberCount.as_view()),
    path(f"{ORGS}/<str:org_id>/members/invite-user", organizations.Invite.as_view()),
    path(f"{ORGS}/<str:org_id>/members/invite-existing-user", organizations.Invite.as_view(existing=True)),
    path(f"{ORGS}/<str:org_id>/members/<str:member_id>", organizations.MemberDetail.as_view()),
    path(f"{ORGS}/<str:org_id>/members/<str:member_id>/organizations", organizations.MemberOrganizations.as_view()),
    path(f"{ORGS}/<str:org_id>/identity-providers", organizations.IdentityProviders.as_view()),
    path(f"{ORGS}/<str:org_id>/identity-providers/<str:alias>", organizations.IdentityProviderDetail.as_view()),
]
IDP = f"{R}/identity-provider"
urlpatterns += [
    path(f"{IDP}/instances", identity_providers.Instances.as_view()),
    path(f"{IDP}/instances/<str:alias>", identity_providers.Instance.as_view()),
    path(f"{IDP}/instances/<str:alias>/mappers", identity_providers.Mappers.as_view()),
    path(f"{IDP}/instances/<str:alias>/mappers/<str:mapper_id>", identity_providers.MapperDetail.as_view()),
    path(f"{IDP}/instances/<str:alias>/mapper-types", identity_providers.MapperTypes.as_view()),
    path(f"{IDP}/providers/<str:provider_id>", identity_providers.ProviderFactory.as_view()),
    path(f"{IDP}/import-config", identity_providers.ImportConfig.as_view()),
    path(f"{R}/users/<str:user_id>/federated-identity", identity_providers.FederatedIdentities.as_view()),
    path(f"{R}/users/<str:user_id>/federated-identity/<str:alias>", identity_providers.FederatedIdentityDetail.as_view()),
]
AUTH = f"{R}/authentication"
urlpatterns += [
    path(f"{AUTH}/flows", flows.Flows.as_view()),
    path(f"{AUTH}/flows/<str:alias>/copy", flows.FlowCopy.as_view()),
    path(f"{AUTH}/flows/<str:alias>/executions", flows.FlowExecutions.as_view()),
    path(f"{AUTH}/flows/<str:alias>/executions/execution", flows.AddExecution.as_view()),
    path(f"{AUTH}/flows/<str:alias>/executions/flow", flows.AddSubFlow.as_view()),
    path(f"{AUTH}/flows/<str:flow_id>", flows.FlowDetail.as_view()),
    path(f"{AUTH}/executions/<str:execution_id>", flows.ExecutionDetail.as_view()),
    path(f"{AUTH}/executions/<str:execution_id>/raise-priority", flows.ExecutionPriority.as_view(up=True)),
    path(f"{AUTH}/executions/<str:execution_id>/lower-priority", flows.ExecutionPriority.as_view(up=False)),
    path(f"{AUTH}/executions/<str:execution_id>/config", flows.ExecutionConfig.as_view()),
    path(f"{AUTH}/config/<str:config_id>", flows.ConfigDetail.as_view()),
    path(f"{AUTH}/config-description/<str:provider_id>", flows.ConfigDescription.as_view()),
    path(f"{AUTH}/authenticator-providers", flows.AuthenticatorProviders.as_view()),
    path(f"{AUTH}/form-action-providers", flows.FormActionProviders.as_view()),
    path(f"{AUTH}/required-actions", flows.RequiredActions.as_view()),
    path(f"{AUTH}/required-actions/<str:alias>", flows.RequiredActionDetail.as_view()),
    path(f"{AUTH}/required-actions/<str:alias>/raise-priority", flows.RequiredActionPriority.as_view(up=True)),
    path(f"{AUTH}/required-actions/<str:alias>/lower-priority", flows.RequiredActionPriority.as_view(up=False)),
    path(f"{AUTH}/register-required-action", flows.RegisterRequiredAction.as_view()),
    path(f"{AUTH}/unregistered-required-actions", flows.UnregisteredRequiredActions.as_view()),
]
for default, kind in ((True, "default"), (False, "optional")):
    urlpatterns += [
        path(f"{R}/default-{kind}-client-scopes", client_scopes.RealmDefaultScopeList.as_view(default=default)),
        path(f"{R}/default-{kind}-client-scopes/<str:scope_id>",
             client_scopes.RealmDefaultScope.as_view(default=default)),
        path(f"{R}/clients/<str:client_uuid>/{kind}-client-scopes",
             client_scopes.ClientLinkedScopes.as_view(default=default)),
        path(f"{R}/clients/<str:client_uuid>/{kind}-client-scopes/<str:scope_id>",
             client_scopes.ClientLinkedScope.as_view(default=default)),
    ]
for owner in ("clients", "client-scopes"):
    mappers = f"{R}/{owner}/<str:owner_id>/protocol-mappers"
    urlpatterns += [
        path(f"{mappers}/models", protocol_mappers.Mappers.as_view(owner=owner)),
        path(f"{mappers}/models/<str:mapper_id>", protocol_mappers.MapperDetail.as_view(owner=owner)),
        path(f"{mappers}/add-models", protocol_mappers.AddMappers.as_view(owner=owner)),
        path(f"{mappers}/protocol/<str:protocol>", protocol_mappers.MappersByProtocol.as_view(owner=owner)),
    ]
for kind, segment, roles_of in (("users", "role-mappings", role_mappings.USER_ROLES),
                                ("groups", "role-mappings", role_mappings.USER_ROLES),
                                ("clients", "scope-mappings", role_mappings.CLIENT_ROLES),
                                ("client-scopes", "scope-mappings", role_mappings.CLIENT_ROLES)):
    owner = f"{R}/{kind}/<str:owner_id>/{segment}"
    urlpatterns.append(path(owner, role_mappings.RoleMappings.as_view(kind=kind, required_role=roles_of["GET"])))
    for scope in ("realm", "clients/<str:client_uuid>"):
        for view in ("", "composite", "available"):
            urlpatterns.append(path(f"{owner}/{scope}" + (f"/{view}" if view else ""),
                                    role_mappings.RoleMappingScope.as_view(kind=kind, view=view,
                                                                           required_role=roles_of)))
for container in (f"{R}/roles", f"{R}/clients/<str:client_uuid>/roles"):
    urlpatterns += [
        path(container, roles.Roles.as_view()),
        path(f"{container}/<str:role_name>", roles.RoleDetail.as_view()),
        path(f"{container}/<str:role_name>/composites", roles.RoleComposites.as_view()),
        path(f"{container}/<str:role_name>/users", roles.RoleUsers.as_view()),
    ]
urlpatterns += authz.urlpatterns_for(R)
