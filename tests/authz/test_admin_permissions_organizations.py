"""Keycloak 26.7's Organizations resource type of the admin permissions, which ours leaves out
(docs/decisions/0093): a permission on it is refused in words, by the Admin API, its evaluation and
an import, and nothing is stored; the type's own resource that Keycloak's export carries imports and
exports unchanged, since it names no organization and no permission may name it."""
import pytest

from realms.data import realm_cache
from realms.models import Client
from realms.representation import RepresentationError, export_realm, import_realm
from tests.authz.test_admin_permissions_api import fgap  # noqa: F401 (a fixture)
from tests.realms.test_import_export import load

pytestmark = pytest.mark.django_db

REFUSED = ("Resource type Organizations is not supported: organizations are administered with the manage-realm "
           "role alone, which admin permissions do not narrow.")


def _settings(realm):
    return Client.objects.get(realm=realm, client_id="admin-permissions").authorization_settings


def test_the_admin_api_refuses_a_permission_on_organizations_in_words(fgap):  # noqa: F811
    realm, base, api, helper = fgap
    before = _settings(realm)
    api("post", f"{base}/policy/user", {"name": "The helper", "users": [helper.pk]})
    for body in ({"resourceType": "Organizations", "scopes": ["view"]},
                 {"resourceType": "Organizations", "scopes": ["manage"], "policies": ["The helper"]}):
        resp = api("post", f"{base}/permission/scope", {"name": "Org admins", **body})
        assert resp.status_code == 400 and resp.json() == {"errorMessage": REFUSED}, resp.content
    assert not [p for p in _settings(realm)["policies"] if p["type"] == "scope" and p["name"] == "Org admins"]
    assert len(_settings(realm)["policies"]) == len(before["policies"]) + 1  # the user policy alone
    # A type Keycloak does not know either keeps Keycloak's message.
    other = api("post", f"{base}/permission/scope", {"name": "Realms", "resourceType": "Realms", "scopes": ["view"]})
    assert other.json() == {"errorMessage": "Resource type not provided."}
    evaluated = api("post", f"{base}/policy/evaluate", {"userId": helper.pk, "resourceType": "Organizations"})
    assert evaluated.status_code == 400 and evaluated.json() == {"errorMessage": REFUSED}


def _with_organizations(permission=None):
    """Keycloak 26.7's export of the fgap realm: the Organizations type's resource, and ``permission``."""
    rep = load("keycloak-fgap-realm-kc26-full-export.json")
    rep["realm"] = "fgap-orgs"
    client = next(c for c in rep["clients"] if c["clientId"] == "admin-permissions")
    settings = client["authorizationSettings"]
    settings["resources"].append({"name": "Organizations", "type": "Organizations", "ownerManagedAccess": False,
                                  "attributes": {}, "uris": [], "scopes": [{"name": "manage"}, {"name": "view"}]})
    if permission:
        settings["policies"].append(permission)
    return rep


def test_an_import_keeps_keycloaks_organizations_resource_and_refuses_a_permission_on_it(fresh_caches):
    realm_cache.clear()
    realm = import_realm(_with_organizations()).realm
    exported = next(c for c in export_realm(realm)["clients"] if c["clientId"] == "admin-permissions")
    assert ("Organizations", "Organizations") in {(r["name"], r.get("type"))
                                                  for r in exported["authorizationSettings"]["resources"]}
    realm.delete()
    permission = {"name": "Org admins", "type": "scope", "logic": "POSITIVE", "decisionStrategy": "UNANIMOUS",
                  "config": {"defaultResourceType": "Organizations", "resources": '["Organizations"]',
                             "scopes": '["view"]', "applyPolicies": '["Allow UK DUA"]'}}
    with pytest.raises(RepresentationError) as refused:
        import_realm(_with_organizations(permission))
    assert "defaultResourceType" in str(refused.value) and REFUSED in str(refused.value)
    # A resource of a type Keycloak does not have is still refused as unknown.
    rep = _with_organizations()
    next(c for c in rep["clients"] if c["clientId"] == "admin-permissions")["authorizationSettings"]["resources"][-1][
        "type"] = "Realms"
    with pytest.raises(RepresentationError, match="unknown resource type 'Realms'"):
        import_realm(rep)
