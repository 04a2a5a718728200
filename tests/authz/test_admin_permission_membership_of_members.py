"""Keycloak 26.6's ``manage-membership-of-members`` of Groups (AdminPermissionsSchema's alias of
Users' ``manage-group-membership``): a permission on a group lets its admins move the group's
members between the groups they may manage the membership of; not other users."""
import pytest

from realms.models import Group, User
from realms.users import storage
from tests.authz.test_admin_permissions_api import fgap  # noqa: F401 (the fixture)
from tests.realms.test_admin_rest_api import PASSWORD, Api, token

pytestmark = pytest.mark.django_db


def test_a_groups_members_join_another_group_through_the_member_scope(fgap):
    realm, base, api, helper = fgap
    de, uk = (Group.objects.get(realm=realm, name=n, parent=None) for n in ("DE", "UK"))
    member, stranger = (User.objects.get(realm=realm, username=n) for n in ("de-user-0", "at-user-1"))
    storage.set_password(realm, helper, PASSWORD)
    policy = api("post", f"{base}/policy/user", {"name": "The helper", "users": [helper.username]}).json()
    for name, resources, scopes in (("Helper fills UK", [uk.pk], ["manage-membership"]),
                                    ("Helper moves DE members", [de.pk], ["manage-membership-of-members"])):
        resp = api("post", f"{base}/permission/scope", {"name": name, "resourceType": "Groups", "resources": resources,
                                                        "scopes": scopes, "policies": [policy["id"]]})
        assert resp.status_code == 201, resp.content
    helper_api = Api(token("fgap", helper.username))
    assert helper_api("put", f"fgap/users/{member.pk}/groups/{uk.pk}").status_code == 204
    assert User.objects.get(pk=member.pk).groups.filter(pk=uk.pk).exists()
    assert helper_api("put", f"fgap/users/{stranger.pk}/groups/{uk.pk}").status_code == 403  # not a DE member
    assert helper_api("delete", f"fgap/users/{member.pk}/groups/{uk.pk}").status_code == 204
    # The member scope manages membership only: not the member's password or details.
    assert helper_api("put", f"fgap/users/{member.pk}", {"firstName": "Moved"}).status_code == 403
    assert helper_api("put", f"fgap/users/{member.pk}/reset-password", {"value": "Not-this-1"}).status_code == 403
