"""The cost model (docs/cost-model.md) of the Admin REST API's common reads (the realm, the users
list and one user, the clients list), as an admin of the realm (``realm-admin``) and as the master
realm's admin, once the realm's configuration is cached, held exactly. The users list holds five
users, so that a query per listed user or client shows as a changed count."""
import pytest
from django.db import connection

from oidc.ssf import streams
from oidc.ssf.models import SsfStream
from realms.models import Client
from realms.users.accounts import create_user
from tests.conftest import assert_costs
from tests.realms.test_admin_rest_api import acme, master_api, realm_admin  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db
USERS = 5

# (queries, shared-cache calls) per request, with what they are. Keep docs/cost-model.md in step.
# Each starts with the caller's user and roles (one query) and the token's revocation marks and
# SSO session from the cache (one call).
ADMIN = {
    "get_realm": (2, 1),  # the realm's default role
    "list_users": (2, 1),  # the page of users
    "get_user": (2, 1),  # the user
    # The clients, the protocol mappers and the client scopes of all of them (one statement each,
    # whatever the number of clients); the Shared Signals streams only with the ``ssf`` feature on
    # (test below).
    "list_clients": (4, 1),
}
# The master realm's admin costs what the realm's own admin does.
EXPECTED = {"realm_admin": ADMIN, "master_admin": ADMIN}


def _expected(who):
    if connection.vendor == "postgresql":
        return EXPECTED[who]
    # The caller's realm is a second statement on SQLite (rows.ahead sends both at once on PostgreSQL).
    return {name: (queries + 1, calls) for name, (queries, calls) in EXPECTED[who].items()}


def _reads(user_id):
    return {"get_realm": "acme", "list_users": "acme/users", "get_user": f"acme/users/{user_id}",
            "list_clients": "acme/clients"}


def _costs(api, user_id, measure):
    reads = _reads(user_id)
    for path in reads.values():  # warm: the realm's configuration and the caller's token checked once
        assert api("get", path).status_code == 200
    found = {}
    for name, path in reads.items():
        with measure() as found[name]:
            response = api("get", path)
        assert response.status_code == 200, response.content
    return found


def test_a_realm_admins_reads(acme, measure, fresh_caches):
    user = [create_user(acme, f"user-{i}") for i in range(USERS)][0]
    api = realm_admin(acme, "ops", "realm-admin")
    assert_costs(_costs(api, user.pk, measure), _expected("realm_admin"))


def test_the_master_admins_reads(master_api, acme, measure, fresh_caches):
    user = [create_user(acme, f"user-{i}") for i in range(USERS)][0]
    assert_costs(_costs(master_api, user.pk, measure), _expected("master_admin"))


def test_the_clients_list_reads_the_shared_signals_streams_with_the_feature_on(acme, measure, fresh_caches, settings):
    """One statement more for the realm's streams, which the receiver's attributes then carry."""
    receiver = Client.objects.create(realm=acme, client_id="receiver", service_accounts_enabled=True,
                                     attributes={"ssf.enabled": "true"})
    stream = streams.create(receiver, "https://idp.example/realms/acme", {"delivery": {"method": SsfStream.POLL}})
    api = realm_admin(acme, "ops", "realm-admin")
    counts = {}
    for feature in ("", "ssf"):
        settings.IDP_FEATURES = feature
        assert api("get", "acme/clients").status_code == 200  # warm
        with measure() as counts["on" if feature else "off"]:
            listed = api("get", "acme/clients").json()
        attributes = next(c for c in listed if c["clientId"] == "receiver")["attributes"]
        assert ("ssf.streamId" in attributes) is (feature == "ssf"), attributes
    assert attributes["ssf.streamId"] == stream.id and attributes["ssf.status"] == "enabled"
    queries, calls = _expected("realm_admin")["list_clients"]
    assert_costs(counts, {"off": (queries, calls), "on": (queries + 1, calls)})
