"""Keycloak's policy synchronizers: a user, group, role or client scope removed from the realm
leaves the policies that name it (a policy left naming nothing goes, and with it its mention in
permissions), and a user's resources and user-managed policies go with the user. Without this the
next write to the resource server was refused ("unknown user ...") until someone mended the
policy by hand."""
import json

import pytest

from realms.models import Client, Group, Role, User
from realms.users.accounts import create_user
from tests.authz.test_admin_api import setup  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db


def _policy(api, base, name):
    return next(p for p in api("get", f"{base}/policy").json() if p["name"] == name)


def test_removed_subjects_leave_the_policies_and_writes_go_on(setup):  # noqa: F811
    realm, base, api = setup
    stay, leave = create_user(realm, "stays"), create_user(realm, "leaves")
    group = Group.objects.create(realm=realm, name="temporary")
    role = Role.objects.create(realm=realm, name="temporary-role")
    assert api("post", f"{base}/policy/user", {"name": "Two users", "users": [stay.pk, leave.pk]}).status_code == 201
    assert api("post", f"{base}/policy/user", {"name": "Leaving user", "users": [leave.pk]}).status_code == 201
    assert api("post", f"{base}/policy/group", {"name": "Temp group", "groups": [{"id": group.pk}]}).status_code == 201
    assert api("post", f"{base}/policy/role", {"name": "Temp role", "roles": [{"id": role.pk}]}).status_code == 201
    owned = api("post", f"{base}/resource", {"name": "Leaver's album", "owner": {"id": leave.pk},
                                             "ownerManagedAccess": True})
    assert owned.status_code == 201, owned.content
    permission = api("post", f"{base}/permission/resource", {
        "name": "Album and more", "resources": [owned.json()["_id"], "Default Resource"],
        "policies": [_policy(api, base, "Leaving user")["id"], _policy(api, base, "Temp role")["id"],
                     _policy(api, base, "Two users")["id"]]})
    assert permission.status_code == 201, permission.content

    leave_id = leave.pk
    leave.delete()
    group.delete()
    role.delete()

    # The next write is accepted, and the settings no longer name what is gone.
    assert api("post", f"{base}/scope", {"name": "after-removals"}).status_code == 201, "write refused"
    after = api("post", f"{base}/policy/user", {"name": "After removals", "users": [stay.pk]})
    assert after.status_code == 201, after.content
    exported = api("get", f"{base}/settings")
    assert exported.status_code == 200
    names = {p["name"] for p in api("get", f"{base}/policy").json()}
    assert "Two users" in names and not names & {"Leaving user", "Temp group", "Temp role"}
    assert json.loads(_policy(api, base, "Two users")["config"]["users"]) == [stay.pk]
    assert "Leaver's album" not in {r["name"] for r in api("get", f"{base}/resource").json()}
    kept = _policy(api, base, "Album and more")
    assert json.loads(kept["config"]["resources"]) == ["Default Resource"]
    assert json.loads(kept["config"]["applyPolicies"]) == ["Two users"]
    client = Client.objects.get(pk=base.split("/")[2])
    assert [p for p in client.authorization_settings["policies"] if p.get("owner") == leave_id] == []
    assert User.objects.filter(pk=stay.pk).exists()
