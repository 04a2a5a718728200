"""The cost model (docs/cost-model.md) of the Account REST API's profile read (what the account
console opens with), once the realm's configuration is cached, held exactly."""
import pytest

from realms.models import Client as ClientModel
from tests.conftest import assert_costs
from tests.realms.test_account_api import acme, bob, bob_token, call  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db

# (queries, shared-cache calls) per request, with what they are. Keep docs/cost-model.md in step.
EXPECTED = {
    # The caller's user with their roles (the realm and the account client from the process's copy
    # of the realm's configuration); the token's revocation marks and SSO session from the cache.
    "account_profile": (1, 1),
}


def test_queries_and_cache_calls_per_request_type(bob_token, measure):
    access = bob_token["access_token"]
    assert call(access, "get", "").status_code == 200  # warm: the realm's configuration cached
    found = {}
    with measure() as found["account_profile"]:
        response = call(access, "get", "")
    assert response.status_code == 200 and response.json()["username"] == "bob", response.content
    assert_costs(found, EXPECTED)


def test_the_account_client_disabled_closes_the_api_at_once(bob_token):
    access = bob_token["access_token"]
    assert call(access, "get", "").status_code == 200  # the realm and the account client now cached
    account = ClientModel.objects.get(realm__name="acme", client_id="account")
    account.enabled = False
    account.save()
    closed = call(access, "get", "")
    assert closed.status_code == 404 and "account management not enabled" in closed.content.decode()
