"""The realm resources of the Admin REST API, relative to ``/admin/realms/`` (registered with
``resources`` from ``RealmsConfig.ready()``; ``/admin/realms`` itself and ``/admin/serverinfo``
are mounted by ``idp/urls.py``)."""
from django.urls import path

from . import realms, roles, users

urlpatterns = [
    path("<str:realm>", realms.RealmDetail.as_view()),
    path("<str:realm>/users", users.Users.as_view()),
    path("<str:realm>/users/count", users.UserCount.as_view()),
    path("<str:realm>/users/<str:user_id>", users.UserDetail.as_view()),
    path("<str:realm>/users/<str:user_id>/reset-password", users.ResetPassword.as_view()),
    path("<str:realm>/users/<str:user_id>/groups", users.UserGroups.as_view()),
    path("<str:realm>/users/<str:user_id>/groups/count", users.UserGroupCount.as_view()),
    path("<str:realm>/users/<str:user_id>/groups/<str:group_id>", users.UserGroupMembership.as_view()),
    path("<str:realm>/users/<str:user_id>/role-mappings", users.RoleMappings.as_view()),
    path("<str:realm>/users/<str:user_id>/logout", users.Logout.as_view()),
    path("<str:realm>/users/<str:user_id>/sessions", users.Sessions.as_view()),
    path("<str:realm>/roles-by-id/<str:role_id>", roles.RoleById.as_view()),
]
for scope in ("realm", "clients/<str:client_uuid>"):
    for kind in ("", "composite", "available"):
        urlpatterns.append(path(f"<str:realm>/users/<str:user_id>/role-mappings/{scope}" + (f"/{kind}" if kind else ""),
                                users.RoleMappingScope.as_view(kind=kind)))
for prefix in ("<str:realm>/roles", "<str:realm>/clients/<str:client_uuid>/roles"):
    urlpatterns += [
        path(prefix, roles.Roles.as_view()),
        path(f"{prefix}/<str:role_name>", roles.RoleDetail.as_view()),
        path(f"{prefix}/<str:role_name>/composites", roles.RoleComposites.as_view()),
        path(f"{prefix}/<str:role_name>/users", roles.RoleUsers.as_view()),
    ]
