"""Authorization Services' group policy reads the realm's groups from the one cached source SAML's
group mapper reads too (``realms.data.realm_cache.group_tree``): once read, a decision costs no
query for them, and a group made, renamed or moved is followed at once."""
import pytest

from realms.authz.evaluation import Identity
from realms.authz.policies import evaluate
from realms.data import realm_cache
from realms.models import Group, User
from realms.representation.services import create_realm
from realms.users.accounts import create_user
from tests.conftest import assert_costs

pytestmark = pytest.mark.django_db


def _policy(path, extend):
    return {"type": "group", "config": {"groups": f'[{{"path":"{path}","extendChildren":{extend}}}]'}}


@pytest.fixture
def realm(fresh_caches):
    realm = create_realm("groups")
    staff = Group.objects.create(realm=realm, name="staff")
    team = Group.objects.create(realm=realm, name="team", parent=staff)
    create_user(realm, "alice").groups.add(Group.objects.create(realm=realm, name="night", parent=team))
    return realm


def _alice(realm):
    return Identity(User.objects.get(realm=realm, username="alice"), "app")


def test_a_group_policy_reads_the_realms_cached_group_tree(realm, measure):
    alice = _alice(realm)
    alice.group_ids()  # the user's groups, remembered per configuration (realms.authz.evaluation)
    tree = realm_cache.group_tree(realm)  # as SAML's group mapper reads it
    assert tree.paths[tree.ids["/staff/team/night"]] == "/staff/team/night"
    found = {}
    with measure() as found["group_policy"]:
        assert evaluate(alice, realm, _policy("/staff", "true"))  # a grandchild counts
        assert not evaluate(alice, realm, _policy("/staff", "false"))
        assert evaluate(alice, realm, _policy("/staff/team/night", "false"))
        assert not evaluate(alice, realm, _policy("/nobody", "true"))
    # Nothing: the policy built its own {path: id} and children from one more query before.
    assert_costs(found, {"group_policy": (0, 0)})
    assert realm_cache.group_tree(realm) is tree


def test_groups_made_renamed_or_moved_are_followed_at_once(realm):
    assert evaluate(_alice(realm), realm, _policy("/staff/team", "true"))  # the tree cached
    team = Group.objects.get(realm=realm, name="team")
    team.name = "crew"
    team.save()
    assert not evaluate(_alice(realm), realm, _policy("/staff/team", "true"))
    assert evaluate(_alice(realm), realm, _policy("/staff/crew", "true"))
    night = Group.objects.get(realm=realm, name="night")
    night.parent = Group.objects.create(realm=realm, name="elsewhere")
    night.save()
    assert not evaluate(_alice(realm), realm, _policy("/staff", "true"))
    assert evaluate(_alice(realm), realm, _policy("/elsewhere", "true"))
    Group.objects.create(realm=realm, name="deeper", parent=night)
    assert realm_cache.group_tree(realm).descendants(night.parent_id) == {
        night.pk, Group.objects.get(realm=realm, name="deeper").pk}
