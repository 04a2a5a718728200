"""Effective roles: the one place that says which roles a user holds.

A user holds the roles mapped to them directly, the roles mapped to each of their groups and
every ancestor of those groups, and, transitively, every role contained in a composite role
they hold. Cycles among composites are allowed (Keycloak allows them) and terminate.
"""
from .models import Group, Role


def expand_composites(roles):
    """The given roles plus every role reachable through composites (one query per level)."""
    seen = {r.pk: r for r in roles}
    frontier = list(seen)
    through = Role.composites.through
    while frontier:
        child_ids = set(
            through.objects.filter(from_role_id__in=frontier).values_list("to_role_id", flat=True)
        ) - seen.keys()
        if not child_ids:
            break
        for role in Role.objects.filter(pk__in=child_ids).select_related("client"):
            seen[role.pk] = role
        frontier = list(child_ids)
    return set(seen.values())


def group_with_ancestors(groups):
    """The given groups and all their ancestors."""
    result = {g.pk: g for g in groups}
    pending = {g.parent_id for g in groups if g.parent_id} - result.keys()
    while pending:
        parents = list(Group.objects.filter(pk__in=pending))
        for g in parents:
            result[g.pk] = g
        pending = {g.parent_id for g in parents if g.parent_id} - result.keys()
    return set(result.values())


def effective_roles(user):
    """Every role the user holds: direct, via groups (with ancestors), composites expanded."""
    direct = set(user.roles.select_related("client"))
    groups = group_with_ancestors(list(user.groups.all()))
    if groups:
        direct |= set(Role.objects.filter(groups__in=groups).select_related("client"))
    return expand_composites(direct)


def realm_role_names(roles):
    return sorted(r.name for r in roles if r.client_id is None)


def client_role_names(roles):
    """{clientId: [role names]} for the client roles among ``roles``."""
    out = {}
    for r in roles:
        if r.client_id is not None:
            out.setdefault(r.client.client_id, []).append(r.name)
    return {k: sorted(v) for k, v in sorted(out.items())}


def has_realm_role(user, name):
    return any(r.client_id is None and r.name == name for r in effective_roles(user))
