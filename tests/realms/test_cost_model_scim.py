"""The cost model (docs/cost-model.md) of SCIM 2.0's reads: a page of Users and one User, for a
provisioning client's bearer token, once the realm's configuration is cached, held exactly. The
page holds five users, so that a query per listed user shows as a changed count."""
import pytest

from realms.models import Client as ClientModel
from tests.conftest import assert_costs
from tests.realms.test_scim import hr, new_user, scim  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db
USERS = 5

# (queries, shared-cache calls) per request, with what they are. Keep docs/cost-model.md in step.
# Each starts with the caller's user and its roles (the realm and the caller's client from the
# process's copy of the realm's configuration); the token's revocation mark from the cache (a
# service account's token: no SSO session).
EXPECTED = {
    "scim_list_users": (5, 1),  # the realm's user tally, the page of users, their groups
    "scim_get_user": (4, 1),  # the user and their groups
}


def test_queries_and_cache_calls_per_request_type(scim, measure, fresh_caches):
    user_id = [new_user(scim, f"user-{i}") for i in range(USERS)][0]["id"]
    reads = {"scim_list_users": "Users", "scim_get_user": f"Users/{user_id}"}
    for path in reads.values():  # warm: the realm's configuration and the caller's token checked once
        assert scim("get", path).status_code == 200
    found = {}
    for name, path in reads.items():
        with measure() as found[name]:
            response = scim("get", path)
        assert response.status_code == 200, response.content
    assert response.json()["id"] == user_id
    assert_costs(found, EXPECTED)


def test_the_cached_realm_and_caller_client_follow_a_change_at_once(scim, hr):
    assert scim("get", "Users").status_code == 200  # the realm and the caller's client now cached
    client = ClientModel.objects.get(realm=hr, client_id="provisioner")
    client.public_client = True
    client.save()
    refused = scim("get", "Users")
    assert refused.status_code == 403 and refused.json()["detail"] == "Public client not allowed"
    hr.scim_api_enabled = False
    hr.save()
    assert scim("get", "Users").status_code == 404
