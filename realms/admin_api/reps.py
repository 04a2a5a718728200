"""The short forms of the export's representations that Keycloak's admin resources answer in
lists (``briefRepresentation``), built from the export's own ``*_rep`` functions."""
from django.db.models import Count

from ..administration.admin_permissions import visible
from ..models import Group
from ..representation.groups import group_rep
from ..representation.roles import role_rep
from ..representation.users import user_fields_rep

_BRIEF_USER_KEYS = ("id", "username", "firstName", "lastName", "email", "emailVerified", "enabled",
                    "createdTimestamp", "federationLink", "serviceAccountClientId")
_BRIEF_ROLE_KEYS = ("id", "name", "description", "composite", "clientRole", "containerId")
_BRIEF_GROUP_KEYS = ("id", "name", "description", "path", "parentId", "subGroups", "subGroupCount")


def brief_user_rep(user):
    return {k: v for k, v in user_fields_rep(user).items() if k in _BRIEF_USER_KEYS}


def brief_role_rep(role):
    rep = role_rep(role, role.client_id or role.realm_id)
    return {k: rep[k] for k in _BRIEF_ROLE_KEYS if k in rep}


def _group_rep(group, sub_group_count, brief):
    """The export's group without its subtree (``subGroups`` empty, ``subGroupCount`` instead),
    as Keycloak 26 answers a group; brief without attributes and role mappings."""
    rep = {**group_rep(group, {}, group.parent_id), "subGroupCount": sub_group_count}
    return {k: v for k, v in rep.items() if k in _BRIEF_GROUP_KEYS} if brief else rep


def group_reps(admin, realm, groups, brief=False):
    """The representation of each of ``groups``, its ``subGroupCount`` the subgroups ``admin`` may
    list: Keycloak 26.2 counts a group's subgroups with the subgroup query, which fine-grained
    admin permissions filter as they filter the lists (``admin_permissions.visible``). One query
    for all of them. ``admin`` None (the account console, no administrator) counts them all."""
    groups = list(groups)
    subgroups = Group.objects.filter(realm=realm, parent__in=[g.pk for g in groups])
    if admin is not None:
        subgroups = visible(admin, realm, "Groups", subgroups)
    counts = dict(subgroups.order_by().values_list("parent_id").annotate(Count("pk")))
    return [_group_rep(g, counts.get(g.pk, 0), brief) for g in groups]


def group_api_rep(admin, realm, group):
    """One group as ``group_reps`` answers it."""
    return group_reps(admin, realm, [group])[0]
