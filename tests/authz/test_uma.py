"""The UMA 2.0 grant, RPTs, uma2-configuration and the protection API (oidc.uma,
oidc.views.uma) on Keycloak's realm-b quickstart: jdoe (role user) may use the default
resources, kolo (user, premium) the premium ones too."""
import base64
import json

import pytest
from django.test import Client as HttpClient

from realms.models import Client, Group, Role, User
from realms.representation import import_realm
from tests.realms.test_import_export import load

pytestmark = pytest.mark.django_db

REALM = "realm-b"
SECRET = "635691e2-f698-4df5-bed1-1f3c90f97815"
UMA = "urn:ietf:params:oauth:grant-type:uma-ticket"
TOKEN = f"/realms/{REALM}/protocol/openid-connect/token"
PROTECTION = f"/realms/{REALM}/authz/protection"


@pytest.fixture
def realm_b(fresh_caches):
    return import_realm(load("quickstarts-kc9-full-export-realm-b.json")).realm


def claims(token):
    return json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))


def user_token(username):
    resp = HttpClient().post(TOKEN, {"grant_type": "password", "client_id": "realm-b-client", "client_secret": SECRET,
                                     "username": username, "password": username})
    assert resp.status_code == 200, resp.content
    return resp.json()["access_token"]


def pat():
    resp = HttpClient().post(TOKEN, {"grant_type": "client_credentials", "client_id": "realm-b-client",
                                     "client_secret": SECRET})
    assert resp.status_code == 200, resp.content
    return resp.json()["access_token"]


def uma(token, **params):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    return HttpClient().post(TOKEN, {"grant_type": UMA, "audience": "realm-b-client", **params}, **headers)


def error(resp):
    return resp.status_code, resp.json()["error"], resp.json().get("error_description")


def test_uma2_configuration(realm_b):
    doc = HttpClient().get(f"/realms/{REALM}/.well-known/uma2-configuration").json()
    issuer = doc["issuer"]
    assert doc["token_endpoint"] == issuer + "/protocol/openid-connect/token"
    assert doc["resource_registration_endpoint"] == issuer + "/authz/protection/resource_set"
    assert doc["permission_endpoint"] == issuer + "/authz/protection/permission"
    assert UMA in doc["grant_types_supported"]
    assert UMA in HttpClient().get(f"/realms/{REALM}/.well-known/openid-configuration").json()["grant_types_supported"]


def test_decisions_follow_the_quickstart(realm_b):
    jdoe, kolo = user_token("jdoe"), user_token("kolo")
    assert uma(jdoe, permission="Default Resource", response_mode="decision").json() == {"result": True}
    assert error(uma(jdoe, permission="Premium Resource", response_mode="decision")) == (
        403, "access_denied", "not_authorized")
    assert uma(kolo, permission="Premium Resource", response_mode="decision").json() == {"result": True}
    everything = uma(kolo, response_mode="permissions").json()
    assert sorted(p["rsname"] for p in everything) == ["Default Resource", "Premium Resource"]
    assert [p["rsname"] for p in uma(jdoe, response_mode="permissions").json()] == ["Default Resource"]
    without_names = uma(jdoe, response_mode="permissions", response_include_resource_name="false").json()
    assert list(without_names[0]) == ["rsid"]


def test_rpt_carries_the_permissions_and_the_resource_server_audience(realm_b):
    resp = uma(user_token("kolo"), permission=["Default Resource", "Premium Resource"])
    assert resp.status_code == 200, resp.content
    body = resp.json()
    rpt = claims(body["access_token"])
    assert sorted(p["rsname"] for p in rpt["authorization"]["permissions"]) == ["Default Resource", "Premium Resource"]
    aud = rpt["aud"] if isinstance(rpt["aud"], list) else [rpt["aud"]]
    assert "realm-b-client" in aud and rpt["azp"] == "realm-b-client"
    assert body["upgraded"] is False
    # A previous RPT's permissions are kept; asking again upgrades it.
    again = uma(user_token("kolo"), permission="Default Resource", rpt=body["access_token"]).json()
    assert again["upgraded"] is True
    assert len(claims(again["access_token"])["authorization"]["permissions"]) == 2


def test_pushed_claims_travel_with_the_permissions(realm_b):
    pushed = base64.urlsafe_b64encode(json.dumps({"organization": "acme"}).encode()).decode().rstrip("=")
    resp = HttpClient().post(TOKEN, {"grant_type": UMA, "audience": "realm-b-client", "client_id": "realm-b-client",
                                     "client_secret": SECRET, "subject_token": user_token("jdoe"),
                                     "claim_token": pushed, "response_mode": "permissions"})
    assert resp.json() == [{"rsid": resp.json()[0]["rsid"], "rsname": "Default Resource",
                            "claims": {"organization": ["acme"]}}]


def test_a_client_asking_for_itself_is_its_service_account(realm_b):
    # The service account has no "user" role: the quickstart's policies deny it.
    resp = HttpClient().post(TOKEN, {"grant_type": UMA, "audience": "realm-b-client", "client_id": "realm-b-client",
                                     "client_secret": SECRET, "response_mode": "decision"})
    assert error(resp) == (403, "access_denied", "not_authorized")
    sa = User.objects.get(realm=realm_b, username="service-account-realm-b-client")
    sa.roles.add(Role.objects.get(realm=realm_b, name="user", client=None))
    resp = HttpClient().post(TOKEN, {"grant_type": UMA, "audience": "realm-b-client", "client_id": "realm-b-client",
                                     "client_secret": SECRET, "permission": "Default Resource",
                                     "response_mode": "decision"})
    assert resp.json() == {"result": True}


@pytest.mark.parametrize(("params", "expected"), [
    ({"permission": "Nope"}, (400, "invalid_resource", "Resource with id [Nope] does not exist.")),
    ({"permission": "Default Resource#fly"}, (400, "invalid_scope", "One of the given scopes [fly] is invalid")),
    ({"audience": ""}, (400, "invalid_request", "You must provide the issuedFor")),
    ({"audience": "nobody"}, (400, "invalid_request", "Unknown resource server id.")),
    ({"audience": "account"}, (400, "invalid_request", "Client does not support permissions")),
    ({"response_mode": "all"}, (400, "invalid_request", "Invalid response_mode")),
    ({"ticket": "not-a-ticket"}, (403, "invalid_ticket", "Ticket verification failed")),
    ({"claim_token": "e30", "claim_token_format": "urn:x"}, (400, "invalid_request",
                                                             "Claim token format [urn:x] not supported")),
])
def test_grant_errors(realm_b, params, expected):
    assert error(uma(user_token("jdoe"), **params)) == expected


def test_an_invalid_bearer_token_is_401(realm_b):
    assert error(uma("garbage", permission="Default Resource")) == (401, "invalid_grant", "Invalid bearer token")


def test_without_bearer_the_client_must_authenticate(realm_b):
    resp = HttpClient().post(TOKEN, {"grant_type": UMA, "audience": "realm-b-client", "client_id": "realm-b-client"})
    assert resp.status_code == 401 and resp.json()["error"] == "invalid_client"


# --- the protection API ------------------------------------------------------------------------

def protection(method, path, token, body=None, **query):
    client = HttpClient(HTTP_AUTHORIZATION=f"Bearer {token}")
    url = PROTECTION + path
    if method == "get":
        return client.get(url, query)
    return getattr(client, method)(url, json.dumps(body) if body is not None else "", content_type="application/json")


def test_resource_registration_and_tickets(realm_b):
    token = pat()
    created = protection("post", "/resource_set", token, {
        "name": "Album", "type": "urn:realm-b-client:resources:default", "resource_scopes": ["album:view"],
        "owner": "jdoe", "ownerManagedAccess": True, "uris": ["/album/1"]})
    assert created.status_code == 201, created.content
    album = created.json()
    assert album["owner"]["name"] == "jdoe" and album["resource_scopes"] == [{"name": "album:view"}]
    assert protection("get", f"/resource_set/{album['_id']}", token).json()["name"] == "Album"
    assert protection("get", "/resource_set", token, name="Album", exactName="true").json() == [album["_id"]]
    assert protection("get", "/resource_set", token, owner="jdoe").json() == [album["_id"]]
    assert len(protection("get", "/resource_set", token).json()) == 3
    dup = protection("post", "/resource_set", token, {"name": "Album", "owner": "jdoe"})
    assert dup.status_code == 409
    updated = protection("put", f"/resource_set/{album['_id']}", token,
                         {"name": "Album", "uris": ["/album/2"], "resource_scopes": ["album:view"],
                          "type": "urn:realm-b-client:resources:default", "ownerManagedAccess": True})
    assert updated.status_code == 204
    assert protection("get", f"/resource_set/{album['_id']}", token).json()["uris"] == ["/album/2"]

    ticket = protection("post", "/permission", token, [{"resource_id": album["_id"], "resource_scopes": ["album:view"]}])
    assert ticket.status_code == 201
    # The owner holds their resource; kolo is granted it by the typed default permission (role user).
    assert uma(user_token("jdoe"), ticket=ticket.json()["ticket"], response_mode="decision").json() == {"result": True}
    granted = uma(user_token("kolo"), ticket=ticket.json()["ticket"], response_mode="permissions").json()
    assert granted == [{"rsid": album["_id"], "rsname": "Album", "scopes": ["album:view"]}]

    bad = protection("post", "/permission", token, [{"resource_id": "nope"}])
    assert bad.status_code == 400 and bad.json()["error"] == "invalid_resource_id"
    assert protection("delete", f"/resource_set/{album['_id']}", token).status_code == 204
    assert protection("get", f"/resource_set/{album['_id']}", token).status_code == 404


def test_protection_api_needs_a_pat_of_a_resource_server(realm_b):
    assert protection("get", "/resource_set", "garbage").status_code == 401
    denied = protection("get", "/resource_set", user_token("jdoe"))  # jdoe lacks uma_protection
    assert denied.status_code == 403 and denied.json()["error_description"] == "Requires uma_protection scope."


def test_remote_resource_management_off_refuses_writes(realm_b):
    client = Client.objects.get(realm=realm_b, client_id="realm-b-client")
    client.authorization_settings = {**client.authorization_settings, "allowRemoteResourceManagement": False}
    client.save()
    token = pat()
    assert protection("get", "/resource_set", token).status_code == 200
    refused = protection("post", "/resource_set", token, {"name": "x"})
    assert refused.status_code == 403 and refused.json()["error"] == "request_not_supported"


def test_owners_share_their_resources_through_permission_tickets(realm_b):
    token = pat()
    album = protection("post", "/resource_set", token, {
        "name": "Holidays", "resource_scopes": ["album:view", "album:delete"], "owner": "jdoe",
        "ownerManagedAccess": True}).json()
    kolo = user_token("kolo")
    asked = {"permission": f"{album['_id']}#album:view", "response_mode": "decision"}
    assert error(uma(kolo, **asked)) == (403, "access_denied", "not_authorized")
    # By name, another user's resource is found only once it is shared with the one asking.
    assert error(uma(kolo, permission="Holidays"))[:2] == (400, "invalid_resource")
    assert uma(user_token("jdoe"), **asked).json() == {"result": True}  # the owner
    # kolo asks; jdoe sees the request and grants it.
    assert error(uma(kolo, submit_request="true", permission=f"{album['_id']}#album:view")) == (
        403, "access_denied", "request_submitted")
    kolo_id = User.objects.get(realm=realm_b, username="kolo").pk
    pending = protection("get", "/permission/ticket", token, requester=kolo_id, returnNames="true").json()
    assert [(t["resourceName"], t["scopeName"], t["granted"]) for t in pending] == [("Holidays", "album:view", False)]
    assert protection("put", "/permission/ticket", token, {**pending[0], "granted": True}).status_code == 204
    assert uma(kolo, **asked).json() == {"result": True}
    assert uma(kolo, permission="Holidays", response_mode="permissions").json() == [
        {"rsid": album["_id"], "rsname": "Holidays", "scopes": ["album:view"]}]
    assert error(uma(kolo, permission="Holidays#album:delete", response_mode="decision"))[2] == "not_authorized"
    # Shared for the whole resource by the resource server; then taken back.
    whole = protection("post", "/permission/ticket", token, {"resource": album["_id"], "requesterName": "kolo",
                                                              "granted": True})
    assert whole.status_code == 201
    assert uma(kolo, permission="Holidays#album:delete", response_mode="decision").json() == {"result": True}
    for ticket in protection("get", "/permission/ticket", token, resourceId=album["_id"]).json():
        assert protection("delete", f"/permission/ticket/{ticket['id']}", token).status_code == 204
    assert error(uma(kolo, **asked))[2] == "not_authorized"
    refused = protection("post", "/permission/ticket", token, {"resource": album["_id"], "requester": "nobody"})
    assert refused.status_code == 400


def test_a_group_joined_or_left_and_a_revoked_token_count_at_once(realm_b):
    """The user's groups are remembered per realm configuration (no query per decision): a
    membership change drops them; a revoked bearer token is refused."""
    staff = Group.objects.create(realm=realm_b, name="staff")
    client = Client.objects.get(realm=realm_b, client_id="realm-b-client")
    settings = client.authorization_settings
    settings["resources"].append({"_id": "staff-only", "name": "Staff Resource", "uris": [], "scopes": [],
                                  "ownerManagedAccess": False, "attributes": {}})
    settings["policies"] += [
        {"id": "staff", "name": "Staff", "type": "group", "logic": "POSITIVE", "decisionStrategy": "UNANIMOUS",
         "config": {"groups": '[{"path":"/staff"}]'}},
        {"id": "staff-permission", "name": "Staff Permission", "type": "resource", "logic": "POSITIVE",
         "decisionStrategy": "UNANIMOUS", "config": {"resources": '["Staff Resource"]', "applyPolicies": '["Staff"]'}}]
    client.save()
    jdoe, token = User.objects.get(realm=realm_b, username="jdoe"), user_token("jdoe")
    assert uma(token, permission="Staff Resource", response_mode="decision").status_code == 403
    jdoe.groups.add(staff)
    assert uma(token, permission="Staff Resource", response_mode="decision").json() == {"result": True}
    jdoe.groups.remove(staff)
    assert uma(token, permission="Staff Resource", response_mode="decision").status_code == 403
    assert uma(token, permission="Default Resource", response_mode="decision").json() == {"result": True}
    revoked = HttpClient().post(f"/realms/{REALM}/protocol/openid-connect/revoke", {
        "token": token, "client_id": "realm-b-client", "client_secret": SECRET})
    assert revoked.status_code == 200
    assert error(uma(token, permission="Default Resource", response_mode="decision")) == (
        401, "invalid_grant", "Invalid bearer token")
