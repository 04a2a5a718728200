"""The cost model (docs/cost-model.md) of SCIM 2.0's reads: a page of Users and one User, for a
provisioning client's bearer token, once the realm's configuration is cached, held exactly. The
page holds five users, so that a query per listed user shows as a changed count."""
import pytest

from tests.conftest import assert_costs
from tests.realms.test_scim import hr, new_user, scim  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db
USERS = 5

# (queries, shared-cache calls) per request, with what they are. Keep docs/cost-model.md in step.
# Each starts with the realm's row and the caller's client row (neither from the process's copy),
# the caller's user and its roles; the token's revocation mark from the cache (a service account's
# token: no SSO session).
EXPECTED = {
    "scim_list_users": (7, 1),  # the realm's user tally, the page of users, their groups
    "scim_get_user": (6, 1),  # the user and their groups
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
