"""User-managed permissions (the protection API's ``uma-policy``, Keycloak's
UserManagedPermissionService): the owner of a user-managed resource grants it by policy with
their own access token, and the UMA grant decides by it at once."""
import copy

import pytest
from django.test import Client as HttpClient

from realms.models import Client
from realms.representation import RepresentationError, export_realm
from realms.representation.resource_server import check, resolve
from tests.authz.test_uma import PROTECTION, REALM, error, pat, protection, realm_b, uma, user_token  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def album(realm_b):  # noqa: F811
    created = protection("post", "/resource_set", pat(), {
        "name": "Kolo's album", "owner": "kolo", "ownerManagedAccess": True,
        "resource_scopes": ["album:view", "album:delete"]})
    assert created.status_code == 201, created.content
    return created.json()["_id"]


def policy(method, path, token, body=None):
    return protection(method, f"/uma-policy{path}", token, body)


def decision(token, ref):
    return uma(token, permission=ref, response_mode="decision")


def test_the_owner_grants_by_policy_and_it_decides_at_once(album):
    kolo, jdoe = user_token("kolo"), user_token("jdoe")
    assert decision(jdoe, f"{album}#album:view").status_code == 403
    created = policy("post", f"/{album}", kolo, {"name": "jdoe views", "scopes": ["album:view"], "users": ["jdoe"]})
    assert created.status_code == 200, created.content
    rep = created.json()
    assert {k: rep[k] for k in ("name", "type", "scopes", "users")} == {
        "name": "jdoe views", "type": "uma", "scopes": ["album:view"], "users": ["jdoe"]}
    assert decision(jdoe, f"{album}#album:view").json() == {"result": True}
    assert decision(jdoe, f"{album}#album:delete").status_code == 403
    # listed for the owner only, filtered as Keycloak's
    assert [p["id"] for p in policy("get", "", kolo).json()] == [rep["id"]]
    assert policy("get", "", jdoe).json() == []
    assert protection("get", "/uma-policy", kolo, scope="album:delete").json() == []
    assert policy("get", f"/{rep['id']}", kolo).json()["users"] == ["jdoe"]
    # replaced: now a role jdoe does not hold
    assert policy("put", f"/{rep['id']}", kolo, {"name": "premium views", "roles": ["premium"]}).status_code == 201
    assert policy("get", f"/{rep['id']}", kolo).json()["roles"] == ["premium"]
    assert decision(jdoe, f"{album}#album:view").status_code == 403
    assert policy("put", f"/{rep['id']}", kolo, {"name": "users view", "roles": ["user"]}).status_code == 201
    assert decision(jdoe, f"{album}#album:delete").json() == {"result": True}  # no scopes given: all of them
    # another user may not touch it
    assert error(policy("delete", f"/{rep['id']}", jdoe)) == (
        400, "invalid_request", f"Only resource owner can access policies for resource [{album}]")
    assert policy("delete", f"/{rep['id']}", kolo).status_code == 204
    assert decision(jdoe, f"{album}#album:view").status_code == 403
    settings = Client.objects.get(realm__name=REALM, client_id="realm-b-client").authorization_settings
    assert [p["name"] for p in settings["policies"] if p.get("owner")] == []  # its own policies went with it


def test_an_export_carries_them_and_an_import_takes_them_back(album):
    assert policy("post", f"/{album}", user_token("kolo"), {"name": "jdoe views", "users": ["jdoe"]}).status_code == 200
    client = Client.objects.get(realm__name=REALM, client_id="realm-b-client")
    exported = next(c for c in export_realm(client.realm)["clients"] if c["clientId"] == "realm-b-client")
    given = copy.deepcopy(exported["authorizationSettings"])
    taken = resolve(client.realm, check(given, "authorizationSettings"), "authorizationSettings")
    assert [p["name"] for p in taken["policies"] if p["type"] == "uma"] == ["jdoe views"]
    next(p for p in given["policies"] if p["type"] == "uma")["owner"] = "nobody"
    with pytest.raises(RepresentationError, match="unknown owner 'nobody'"):
        resolve(client.realm, check(given, "authorizationSettings"), "authorizationSettings")
    del next(p for p in given["policies"] if p["type"] == "uma")["owner"]
    with pytest.raises(RepresentationError, match="policy type 'uma' is not supported here"):
        check(given, "authorizationSettings")


def test_deleting_the_resource_deletes_its_policies(album):
    kolo = user_token("kolo")
    assert policy("post", f"/{album}", kolo, {"name": "jdoe views", "users": ["jdoe"]}).status_code == 200
    assert protection("delete", f"/resource_set/{album}", pat()).status_code == 204
    assert policy("get", "", kolo).json() == []


@pytest.mark.parametrize("body, expected", [
    ({"name": "x", "scopes": ["album:fly"]},
     (400, "invalid_request", "Some of the scopes [album:fly] are not valid for resource [{album}]")),
    ({"id": "mine", "name": "x"}, (400, "invalid_request", "Newly created uma policies should not have an id")),
    ({"name": "x", "condition": "$evaluation.grant()"}, (400, "invalid_request", "condition: Script upload is disabled")),
    ({"name": "x", "users": ["nobody"]}, (400, "invalid_request", "unknown user 'nobody'")),
])
def test_refusals(album, body, expected):
    status, code, message = expected
    assert error(policy("post", f"/{album}", user_token("kolo"), body)) == (status, code, message.format(album=album))


def test_only_owners_of_user_managed_resources_with_remote_management(album):
    jdoe, kolo = user_token("jdoe"), user_token("kolo")
    assert error(policy("post", f"/{album}", jdoe, {"name": "x"})) == (
        400, "invalid_request", f"Only resource owner can access policies for resource [{album}]")
    assert error(policy("post", "/nope", kolo, {"name": "x"})) == (400, "invalid_request", "Resource [nope] cannot be found")
    plain = protection("post", "/resource_set", pat(), {"name": "Plain", "owner": "kolo"}).json()["_id"]
    assert error(policy("post", f"/{plain}", kolo, {"name": "x"})) == (
        400, "invalid_request", "Only resources with owner managed accessed can have policies")
    client = Client.objects.get(realm__name=REALM, client_id="realm-b-client")
    client.authorization_settings["allowRemoteResourceManagement"] = False
    client.save()
    assert error(policy("post", f"/{album}", kolo, {"name": "x"}))[:2] == (403, "request_not_supported")
    assert error(policy("get", "", "garbage")) == (401, "invalid_token", "Token verification failed")


def test_uma2_configuration_names_the_policy_endpoint(realm_b):  # noqa: F811
    doc = HttpClient().get(f"/realms/{REALM}/.well-known/uma2-configuration").json()
    assert doc["policy_endpoint"] == doc["issuer"] + "/authz/protection/uma-policy"
    assert PROTECTION.endswith("/authz/protection")
