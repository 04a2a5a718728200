"""The group-membership mapper's full paths come from the realm's cached group paths
(``realm_cache.group_tree``), not a parent read per level: a user in a 3-level group refreshes at
the cost of one in a top-level group (the user's groups, one query), and a renamed parent is seen
at once (a group change drops the realm's configuration, paths included)."""
from oidc.tokens import decode
from realms.models import Group

from .conftest import code_for, exchange, refresh
from .test_claims import add_mapper


def _groups(realm, body):
    return decode(realm, body["access_token"], f"http://testserver/realms/{realm.name}")["groups"]


def _signed_in(http, realm, alice):
    body = exchange(http, realm, code_for(realm, alice)[0]).json()
    first = refresh(http, realm, body["refresh_token"])  # the client session's copy put, the paths read
    assert first.status_code == 200, first.content
    return first.json()


def test_a_three_level_group_costs_what_a_top_level_one_does(http, realm, alice, measure):
    add_mapper(realm, "oidc-group-membership-mapper", {"claim.name": "groups", "full.path": "true",
                                                        "access.token.claim": "true"})
    top = Group.objects.create(realm=realm, name="org")
    alice.groups.add(Group.objects.create(realm=realm, name="guests"))
    body = _signed_in(http, realm, alice)
    with measure() as top_level:
        body = refresh(http, realm, body["refresh_token"]).json()
    assert _groups(realm, body) == ["/guests"]
    middle = Group.objects.create(realm=realm, name="unit", parent=top)
    alice.groups.add(Group.objects.create(realm=realm, name="team", parent=middle))
    body = _signed_in(http, realm, alice)
    with measure() as three_levels:
        body = refresh(http, realm, body["refresh_token"]).json()
    assert _groups(realm, body) == ["/guests", "/org/unit/team"]
    # The user's groups (one query) beside the refresh's one Redis call; no parent row (two more
    # for the 3-level group, one per level above it, before).
    assert top_level.counts == three_levels.counts == (1, 1), (three_levels.queries, three_levels.cache_calls)


def test_a_renamed_parent_is_in_the_next_token(http, realm, alice):
    add_mapper(realm, "oidc-group-membership-mapper", {"claim.name": "groups", "full.path": "true",
                                                        "access.token.claim": "true"})
    top = Group.objects.create(realm=realm, name="org")
    alice.groups.add(Group.objects.create(realm=realm, name="team", parent=top))
    body = _signed_in(http, realm, alice)
    assert _groups(realm, body) == ["/org/team"]
    top.name = "company"
    top.save()
    assert _groups(realm, refresh(http, realm, body["refresh_token"]).json()) == ["/company/team"]
