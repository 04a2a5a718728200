"""effective_roles: direct, via groups and all their ancestors, composites expanded (cycles end)."""
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from realms.models import (
    Client,
    Group,
    Realm,
    Role,
    User,
    client_role_names,
    effective_roles,
    expand_composites,
    has_realm_role,
    realm_role_names,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def realm():
    return Realm.objects.create(name="roles")


def role(realm, name, client=None, contains=()):
    r = Role.objects.create(realm=realm, name=name, client=client)
    r.composites.add(*contains)
    return r


def test_composite_cycles_terminate(realm):
    a = role(realm, "a")
    b = role(realm, "b", contains=[a])
    c = role(realm, "c", contains=[b])
    a.composites.add(c)  # a -> c -> b -> a
    loner = role(realm, "self-loop")
    loner.composites.add(loner)
    assert expand_composites([a]) == {a, b, c}
    assert expand_composites([loner]) == {loner}
    u = User.objects.create(realm=realm, username="u")
    u.roles.add(b)
    assert realm_role_names(effective_roles(u)) == ["a", "b", "c"]


def test_nested_groups_grant_every_ancestors_roles(realm):
    app = Client.objects.create(realm=realm, client_id="app")
    top_role, mid_role, leaf_role = role(realm, "top"), role(realm, "mid"), role(realm, "leaf")
    reader = role(realm, "reader", client=app)
    writer = role(realm, "writer", client=app, contains=[reader])
    sibling_role = role(realm, "sibling")
    top = Group.objects.create(realm=realm, name="top")
    mid = Group.objects.create(realm=realm, name="mid", parent=top)
    leaf = Group.objects.create(realm=realm, name="leaf", parent=mid)
    sibling = Group.objects.create(realm=realm, name="sibling", parent=top)
    top.roles.add(top_role)
    mid.roles.add(mid_role, writer)
    leaf.roles.add(leaf_role)
    sibling.roles.add(sibling_role)

    u = User.objects.create(realm=realm, username="deep")
    u.groups.add(leaf)
    with CaptureQueriesContext(connection) as queries:
        roles = effective_roles(u)
    assert len(queries) == 1  # groups, ancestors and composites at once: every API request asks
    assert realm_role_names(roles) == ["leaf", "mid", "top"]  # not the sibling group's role
    assert client_role_names(roles) == {"app": ["reader", "writer"]}
    assert has_realm_role(u, "top") and not has_realm_role(u, "sibling")


def test_direct_and_group_roles_combine_and_other_realms_do_not_leak(realm):
    other = Realm.objects.create(name="elsewhere")
    mine = role(realm, "mine")
    theirs = role(other, "mine")
    g = Group.objects.create(realm=realm, name="g")
    g.roles.add(role(realm, "from-group"))
    u = User.objects.create(realm=realm, username="u")
    u.roles.add(mine)
    u.groups.add(g)
    assert effective_roles(u) == {mine, Role.objects.get(realm=realm, name="from-group")}
    assert theirs not in effective_roles(u)
    assert effective_roles(User.objects.create(realm=realm, username="nobody")) == set()
