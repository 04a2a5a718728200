"""Fine-grained admin permissions v2 managed through the ``admin-permissions`` client's
``authz/resource-server`` routes, as Keycloak 26.2 manages them (AdminPermissionsSchema): what is
written there decides the Admin API at once; what the schema does not hold is refused with
Keycloak's messages."""
import pytest

from realms.data import realm_cache
from realms.models import Client, User
from realms.representation import export_realm, import_realm
from realms.users import storage
from tests.realms.test_admin_rest_api import PASSWORD, Api, realm_admin, token
from tests.realms.test_import_export import load

pytestmark = pytest.mark.django_db


@pytest.fixture
def fgap(fresh_caches):
    realm_cache.clear()
    realm = import_realm(load("keycloak-fgap-realm-kc26-full-export.json")).realm
    client = Client.objects.get(realm=realm, client_id="admin-permissions")
    api = realm_admin(realm, "authz-admin", "manage-authorization")
    helper = User.objects.get(realm=realm, username="at-user-0")  # holds no administration role
    storage.set_password(realm, helper, PASSWORD)
    return realm, f"fgap/clients/{client.pk}/authz/resource-server", api, helper


def test_a_permission_written_through_the_route_takes_effect_at_once(fgap):
    realm, base, api, helper = fgap
    helper_api = Api(token("fgap", "at-user-0"))
    assert helper_api("get", "fgap/users").status_code == 403
    policy = api("post", f"{base}/policy/user", {"name": "The helper", "users": [helper.pk]})
    assert policy.status_code == 201, policy.content
    permission = api("post", f"{base}/permission/scope", {
        "name": "Helper views users", "resourceType": "Users", "scopes": ["view"], "policies": [policy.json()["id"]]})
    assert permission.status_code == 201, permission.content
    rep = permission.json()
    assert rep["resourceType"] == "Users" and rep["resources"] == [] and rep["scopes"] == [
        next(s["id"] for s in api("get", f"{base}/scope").json() if s["name"] == "view")]
    listed = helper_api("get", "fgap/users")
    # everyone but the members of the groups whose permissions (the export's) deny the helper
    assert listed.status_code == 200 and {u["username"] for u in listed.json()} == {
        "at-dua-0", "at-dua-1", "de-dua-0", "de-dua-1", "uk-dua-0", "uk-dua-1", "authz-admin"}
    # Keycloak's permission search
    found = api("get", f"{base}/permission", resourceType="Users", scope="view").json()
    assert [p["name"] for p in found] == ["Helper views users"]
    assert api("get", f"{base}/permission", resourceType="Clients").json() == []
    # the settings stay what an import accepts, and export as Keycloak's
    exported = next(c for c in export_realm(realm)["clients"] if c["clientId"] == "admin-permissions")
    assert "Helper views users" in {p["name"] for p in exported["authorizationSettings"]["policies"]}
    assert api("delete", f"{base}/permission/{rep['id']}").status_code == 204
    assert helper_api("get", "fgap/users").status_code == 403


def test_a_permission_on_named_users_and_its_update(fgap):
    realm, base, api, helper = fgap
    # users whose groups no permission of the export names
    de0, uk0 = (User.objects.get(realm=realm, username=n) for n in ("de-dua-0", "uk-dua-0"))
    policy = api("post", f"{base}/policy/user", {"name": "The helper", "users": [helper.username]}).json()
    created = api("post", f"{base}/permission/scope", {
        "name": "Helper views DE 0", "resourceType": "Users", "resources": ["de-dua-0"], "scopes": ["view"],
        "policies": ["The helper"]})
    assert created.status_code == 201, created.content
    assert created.json()["resources"] == [de0.pk]  # a username resolves to the user's id
    helper_api = Api(token("fgap", "at-user-0"))
    assert helper_api("get", f"fgap/users/{de0.pk}").status_code == 200
    assert helper_api("get", f"fgap/users/{uk0.pk}").status_code == 403
    updated = api("put", f"{base}/permission/scope/{created.json()['id']}", {
        "name": "Helper views UK 0", "resourceType": "Users", "resources": [uk0.pk], "scopes": ["view"],
        "policies": [policy["id"]]})
    assert updated.status_code == 204, updated.content
    assert helper_api("get", f"fgap/users/{de0.pk}").status_code == 403
    assert helper_api("get", f"fgap/users/{uk0.pk}").status_code == 200
    # the resource of an object no permission names any more is gone (Keycloak's orphan removal)
    names = {r["name"] for r in Client.objects.get(realm=realm, client_id="admin-permissions")
             .authorization_settings["resources"]}
    assert uk0.pk in names and de0.pk not in names
    # the Evaluate tab: the permissions alone decide, per scope of the type
    evaluation = api("post", f"{base}/policy/evaluate", {
        "userId": helper.pk, "resourceType": "Users", "resources": [{"_id": uk0.pk}]}).json()
    result = evaluation["results"][0]
    assert evaluation["status"] == "PERMIT" and result["allowedScopes"] == [{"name": "view"}]
    assert [p["policy"]["name"] for p in result["policies"]] == ["Helper views UK 0"]
    assert result["policies"][0]["associatedPolicies"][0]["status"] == "PERMIT"
    other = api("post", f"{base}/policy/evaluate", {
        "userId": helper.pk, "resourceType": "Users", "resources": [{"_id": de0.pk}]}).json()
    assert other["status"] == "DENY" and other["results"][0]["policies"] == []


@pytest.mark.parametrize("body, message", [
    ({"scopes": ["view"]}, "Resource type not provided."),
    ({"resourceType": "Realms", "scopes": ["view"]}, "Resource type not provided."),
    ({"resourceType": "Users"}, "Scopes not provided."),
    ({"resourceType": "Users", "scopes": ["fly"]}, "Scope [fly] does not exist."),
    ({"resourceType": "Users", "scopes": ["view-members"]}, "Scope view-members was not found for resource type Users."),
    ({"resourceType": "Users", "scopes": ["view"], "resources": ["nobody"]},
     "Resource [nobody] does not exist for type [Users]"),
    ({"resourceType": "Users", "scopes": ["view"], "policies": ["No such policy"]},
     "Policy with id [No such policy] not found"),
])
def test_the_schema_refuses_what_it_does_not_hold(fgap, body, message):
    realm, base, api, _ = fgap
    before = Client.objects.get(realm=realm, client_id="admin-permissions").authorization_settings
    resp = api("post", f"{base}/permission/scope", {"name": "Bad", **body})
    assert resp.status_code == 400 and resp.json() == {"errorMessage": message}
    assert Client.objects.get(realm=realm, client_id="admin-permissions").authorization_settings == before


def test_resources_scopes_and_other_types_are_not_for_this_client(fgap):
    realm, base, api, _ = fgap
    not_supported = {"errorMessage": "Not supported for this client."}
    assert api("post", f"{base}/resource", {"name": "Loose"}).json() == not_supported
    assert api("post", f"{base}/scope", {"name": "fly"}).json() == not_supported
    assert api("post", f"{base}/import", {"resources": [{"name": "Loose"}]}).json() == not_supported
    scope = api("get", f"{base}/scope").json()[0]
    assert api("delete", f"{base}/scope/{scope['id']}").json() == not_supported
    resource = api("get", f"{base}/resource").json()[0]
    assert api("delete", f"{base}/resource/{resource['_id']}").json() == not_supported
    assert api("post", f"{base}/permission/resource", {"name": "R", "resourceType": "Users"}).json() == {
        "errorMessage": "Policy type not supported by feature admin-fine-grained-authz:v2"}
    regex = api("post", f"{base}/policy/regex", {"name": "Rx", "targetClaim": "sub", "pattern": ".*"})
    assert regex.status_code == 400 and "not supported in fine-grained admin permissions" in regex.json()["errorMessage"]
    # the reads have stable ids across requests (the import kept the settings without any)
    assert api("get", f"{base}/resource").json()[0]["_id"] == resource["_id"]
    assert {r["name"] for r in api("get", f"{base}/resource").json()} >= {"Users", "Groups", "Clients", "Roles"}
    # only manage-authorization writes
    viewer = realm_admin(realm, "authz-viewer", "view-authorization")
    assert viewer("get", f"{base}/permission").status_code == 200
    assert viewer("post", f"{base}/policy/user", {"name": "x", "users": []}).status_code == 403


def test_a_removed_object_leaves_the_permissions_naming_it(fgap):
    """Keycloak's removeResourceObject: a permission loses a removed user, and goes when the user
    was all it named (empty, it would name every user)."""
    realm, base, api, helper = fgap
    de0, uk0 = (User.objects.get(realm=realm, username=n) for n in ("de-dua-0", "uk-dua-0"))
    api("post", f"{base}/policy/user", {"name": "The helper", "users": [helper.pk]})
    both = api("post", f"{base}/permission/scope", {"name": "Both", "resourceType": "Users", "scopes": ["view"],
                                                     "resources": [de0.pk, uk0.pk], "policies": ["The helper"]}).json()
    only = api("post", f"{base}/permission/scope", {"name": "Only DE", "resourceType": "Users", "scopes": ["view"],
                                                     "resources": [de0.pk], "policies": ["The helper"]}).json()
    helper_api = Api(token("fgap", "at-user-0"))
    assert helper_api("get", f"fgap/users/{uk0.pk}").status_code == 200
    de0.delete()
    assert api("get", f"{base}/permission/scope/{both['id']}").json()["resources"] == [uk0.pk]
    assert api("get", f"{base}/permission/scope/{only['id']}").status_code == 404
    assert "Only DE" not in {p["name"] for p in api("get", f"{base}/permission").json()}
    # writing goes on: the next change keeps the settings without the removed user
    assert api("post", f"{base}/permission/scope", {"name": "Later", "resourceType": "Clients", "scopes": ["view"],
                                                    "policies": ["The helper"]}).status_code == 201
    stored = Client.objects.get(realm=realm, client_id="admin-permissions").authorization_settings
    assert {p["name"] for p in stored["policies"]} >= {"Both", "Later"} and "Only DE" not in {
        p["name"] for p in stored["policies"]}
    assert de0.pk not in {r["name"] for r in stored["resources"]}
    assert helper_api("get", f"fgap/users/{uk0.pk}").status_code == 200


def test_switching_admin_permissions_on_through_the_api_makes_the_client(fresh_caches):
    from realms.representation.services import create_realm

    realm = create_realm("fgap-switch")
    api = realm_admin(realm, "switch-admin", "manage-realm", "manage-authorization", "view-clients")
    assert not Client.objects.filter(realm=realm, client_id="admin-permissions").exists()
    assert api("put", "fgap-switch", {"adminPermissionsEnabled": False}).status_code == 204
    assert not Client.objects.filter(realm=realm, client_id="admin-permissions").exists()
    assert api("put", "fgap-switch", {"adminPermissionsEnabled": True}).status_code == 204
    client = Client.objects.get(realm=realm, client_id="admin-permissions")
    # ... ready for the authz routes, with the schema's scopes
    scopes = api("get", f"fgap-switch/clients/{client.pk}/authz/resource-server/scope")
    assert scopes.status_code == 200 and {"view", "manage"} <= {s["name"] for s in scopes.json()}
    assert api("put", "fgap-switch", {"adminPermissionsEnabled": True}).status_code == 204
    assert Client.objects.filter(realm=realm, client_id="admin-permissions").count() == 1


def test_a_realm_imported_with_admin_permissions_on_gets_the_client(fresh_caches):
    """As Keycloak's import: the switch on and no admin-permissions client in the file."""
    realm = import_realm({"realm": "imported-fgap", "enabled": True, "adminPermissionsEnabled": True}).realm
    client = Client.objects.get(realm=realm, client_id="admin-permissions")
    assert client.authorization_services_enabled and client.authorization_settings["resources"]
    off = import_realm({"realm": "imported-off", "enabled": True}).realm
    assert not Client.objects.filter(realm=off, client_id="admin-permissions").exists()
