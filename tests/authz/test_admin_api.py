"""The Admin REST API's ``clients/{id}/authz/resource-server`` routes (realms.admin_api.authz):
what is written there is what the UMA grant decides by; what cannot be evaluated is refused."""
import pytest

from realms.models import Client, Role, User
from realms.representation import import_realm
from realms.users.accounts import enable_service_account
from tests.authz.test_uma import uma, user_token
from tests.realms.test_admin_rest_api import realm_admin
from tests.realms.test_import_export import load

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup(fresh_caches):
    realm = import_realm(load("quickstarts-kc9-full-export-realm-b.json")).realm
    client = Client.objects.get(realm=realm, client_id="realm-b-client")
    api = realm_admin(realm, "authz-admin", "manage-authorization", "view-clients")
    return realm, f"realm-b/clients/{client.pk}/authz/resource-server", api


def test_settings_and_enforcement_mode(setup):
    realm, base, api = setup
    rep = api("get", base).json()
    assert rep["policyEnforcementMode"] == "ENFORCING" and rep["decisionStrategy"] == "UNANIMOUS"
    assert {r["name"] for r in api("get", f"{base}/settings").json()["resources"]} == {
        "Default Resource", "Premium Resource"}
    created = api("post", f"{base}/resource", {"name": "Loose"})
    assert created.status_code == 201
    jdoe = user_token("jdoe")
    assert uma(jdoe, permission="Loose", response_mode="decision").status_code == 403
    assert api("put", base, {**rep, "policyEnforcementMode": "PERMISSIVE"}).status_code == 204
    assert uma(jdoe, permission="Loose", response_mode="decision").json() == {"result": True}
    assert api("put", base, {**rep, "policyEnforcementMode": "LAX"}).status_code == 400


def test_scopes_resources_policies_and_permissions(setup):
    realm, base, api = setup
    scope = api("post", f"{base}/scope", {"name": "doc:edit"}).json()
    resource = api("post", f"{base}/resource", {"name": "Doc", "scopes": [{"name": "doc:edit"}]}).json()
    premium = Role.objects.get(realm=realm, client=None, name="premium")
    policy = api("post", f"{base}/policy/role", {"name": "Premium only", "roles": [{"id": premium.pk}]})
    assert policy.status_code == 201, policy.content
    permission = api("post", f"{base}/permission/scope", {
        "name": "Edit docs", "resources": [resource["_id"]], "scopes": [scope["id"]], "policies": [policy.json()["id"]]})
    assert permission.status_code == 201, permission.content
    typed = api("get", f"{base}/permission/scope/{permission.json()['id']}").json()
    assert typed["scopes"] == [scope["id"]] and typed["policies"] == [policy.json()["id"]]
    assert [p["name"] for p in api("get", f"{base}/permission").json()] == [
        "Default Permission", "Premium Permission", "Edit docs"]
    assert uma(user_token("kolo"), permission="Doc#doc:edit", response_mode="decision").json() == {"result": True}
    assert uma(user_token("jdoe"), permission="Doc#doc:edit", response_mode="decision").status_code == 403

    evaluation = api("post", f"{base}/policy/evaluate", {
        "userId": User.objects.get(realm=realm, username="jdoe").pk, "resources": [{"_id": resource["_id"]}]}).json()
    assert evaluation["status"] == "DENY"
    assert evaluation["results"][0]["policies"][0]["associatedPolicies"][0]["status"] == "DENY"
    what_if = api("post", f"{base}/policy/evaluate", {
        "userId": User.objects.get(realm=realm, username="jdoe").pk, "roleIds": [premium.pk],
        "resources": [{"_id": resource["_id"]}]}).json()
    assert what_if["status"] == "PERMIT" and what_if["results"][0]["allowedScopes"] == [{"name": "doc:edit"}]

    # A renamed scope is renamed where it is used; a deleted policy leaves the permissions.
    assert api("put", f"{base}/scope/{scope['id']}", {"name": "doc:write"}).status_code == 204
    assert uma(user_token("kolo"), permission="Doc#doc:write", response_mode="decision").json() == {"result": True}
    assert api("delete", f"{base}/policy/{policy.json()['id']}").status_code == 204
    assert api("get", f"{base}/policy/{permission.json()['id']}").json()["config"]["applyPolicies"] == "[]"
    assert api("delete", f"{base}/resource/{resource['_id']}").status_code == 204
    assert api("get", f"{base}/resource/{resource['_id']}").status_code == 404


@pytest.mark.parametrize(("kind", "body", "message"), [
    ("js", {"name": "j", "code": "$evaluation.grant()"}, "Script upload is disabled"),
    ("uma", {"name": "u"}, "policy type 'uma' is not supported"),
    ("role", {"name": "r", "roles": [{"id": "nope"}]}, "unknown role 'nope'"),
    ("aggregate", {"name": "a", "policies": ["nope"]}, "unknown policy 'nope'"),
    ("group", {"name": "g", "groups": [], "groupsClaim": "groups"}, "groups from a token claim are not supported"),
])
def test_what_cannot_be_evaluated_is_refused(setup, kind, body, message):
    realm, base, api = setup
    resp = api("post", f"{base}/policy/{kind}", body)
    assert resp.status_code == 400 and message in resp.json()["errorMessage"]


def test_viewing_is_not_managing(setup):
    realm, base, _ = setup
    viewer = realm_admin(realm, "authz-viewer", "view-authorization")
    assert viewer("get", f"{base}/resource").status_code == 200
    assert viewer("post", f"{base}/resource", {"name": "x"}).status_code == 403


def test_duplicate_names_conflict(setup):
    realm, base, api = setup
    assert api("post", f"{base}/resource", {"name": "Default Resource"}).status_code == 409
    assert api("post", f"{base}/policy/user", {"name": "Default Policy", "users": []}).status_code == 409


def test_admin_permissions_are_not_an_applications_resource_server(fresh_caches):
    """The fgap export's admin-permissions client keeps the admin-permissions schema: the
    routes serve it under that schema (tests/authz/test_admin_permissions_api.py), the UMA grant
    refuses it rather than treat it as a resource server."""
    from django.test import Client as HttpClient

    realm = import_realm(load("keycloak-fgap-realm-kc26-full-export.json")).realm
    client = Client.objects.get(realm=realm, client_id="admin-permissions")
    api = realm_admin(realm, "authz-admin", "manage-authorization")
    resp = api("post", f"{realm.name}/clients/{client.pk}/authz/resource-server/resource", {"name": "Loose"})
    assert resp.status_code == 400 and resp.json() == {"errorMessage": "Not supported for this client."}
    asker = Client(realm=realm, client_id="asker", public_client=False, service_accounts_enabled=True)
    asker.set_secret("asker-secret")
    asker.save()
    enable_service_account(asker)
    resp = HttpClient().post(f"/realms/{realm.name}/protocol/openid-connect/token", {
        "grant_type": "urn:ietf:params:oauth:grant-type:uma-ticket", "audience": "admin-permissions",
        "client_id": "asker", "client_secret": "asker-secret"})
    assert (resp.status_code, resp.json()["error_description"]) == (400, "Client does not support permissions")


def test_import_merges_a_resource_server_by_name(setup):
    """``resource-server/import`` as Keycloak's importSettings: what is named again replaces what
    holds the name (keeping its id), what is new is added, nothing is removed."""
    realm, base, api = setup
    before = api("get", f"{base}/settings").json()
    premium_id = next(p["id"] for p in before["policies"] if p["name"] == "Premium Policy")
    jdoe = user_token("jdoe")
    assert uma(jdoe, permission="Premium Resource", response_mode="decision").status_code == 403
    given = {"policyEnforcementMode": "ENFORCING", "decisionStrategy": "AFFIRMATIVE",
             "resources": [{"name": "Imported", "type": "urn:realm-b-client:resources:premium"}],
             "policies": [{"name": "Premium Policy", "type": "role", "config": {"roles": '[{"id":"user"}]'}}]}
    assert api("post", f"{base}/import", given).status_code == 204
    after = api("get", f"{base}/settings").json()
    assert after["decisionStrategy"] == "AFFIRMATIVE"
    assert {r["name"] for r in after["resources"]} == {"Default Resource", "Premium Resource", "Imported"}
    assert next(p for p in after["policies"] if p["name"] == "Premium Policy")["id"] == premium_id
    assert len(after["policies"]) == len(before["policies"])
    # the replaced policy now lets any user in
    assert uma(jdoe, permission="Premium Resource", response_mode="decision").json() == {"result": True}
    assert uma(jdoe, permission="Imported", response_mode="decision").json() == {"result": True}
    refused = api("post", f"{base}/import", {"policies": [{"name": "js", "type": "js", "config": {}}]})
    assert refused.status_code == 400 and "Script upload is disabled" in refused.json()["errorMessage"]
    unknown = api("post", f"{base}/import", {"policies": [{"name": "p", "type": "scope", "config": {
        "scopes": '["nope"]', "applyPolicies": "[]"}}]})
    assert unknown.status_code == 400 and "unknown scope 'nope'" in unknown.json()["errorMessage"]
    assert api("get", f"{base}/settings").json() == after  # a refused import changes nothing


def test_what_a_policy_is_tied_to(setup):
    """Keycloak's ``policy/{id}/associatedPolicies``, ``dependentPolicies``, ``resources`` and
    ``scopes`` (admin-client's getAssociatedPolicies ...)."""
    realm, base, api = setup
    policies = {p["name"]: p for p in api("get", f"{base}/policy").json()}
    permission, policy = policies["Premium Permission"], policies["Premium Policy"]
    associated = api("get", f"{base}/policy/{permission['id']}/associatedPolicies").json()
    assert [(p["id"], p["name"], p["type"]) for p in associated] == [(policy["id"], "Premium Policy", "role")]
    assert [p["name"] for p in api("get", f"{base}/policy/{policy['id']}/dependentPolicies").json()] == [
        "Premium Permission"]
    assert api("get", f"{base}/permission/{permission['id']}/resources").json() == []  # by resource type
    scope = api("post", f"{base}/scope", {"name": "doc:edit"}).json()
    resource = api("post", f"{base}/resource", {"name": "Doc", "scopes": [{"name": "doc:edit"}]}).json()
    created = api("post", f"{base}/permission/scope", {
        "name": "Edit docs", "resources": [resource["_id"]], "scopes": [scope["id"]], "policies": [policy["id"]]}).json()
    assert api("get", f"{base}/permission/{created['id']}/resources").json() == [
        {"_id": resource["_id"], "name": "Doc"}]
    assert api("get", f"{base}/permission/{created['id']}/scopes").json() == [scope]
    assert api("get", f"{base}/policy/nope/scopes").status_code == 404
