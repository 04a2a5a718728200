"""Admin API ``client-policies/policies`` and ``/profiles`` while no condition or executor is
implemented (decision 0081): empty documents read and written, any policy or profile refused."""
import pytest

from tests.realms.test_admin_rest_api import PASSWORD, acme, master_api, realm_admin  # noqa: F401 (fixtures)

from .test_import import FAPI2_POLICY

pytestmark = pytest.mark.django_db


def test_read_empty_documents(master_api, acme):  # noqa: F811
    assert master_api("get", "acme/client-policies/policies").json() == {"policies": []}
    assert master_api("get", "acme/client-policies/policies", **{"include-global-policies": "true"}).json() == {
        "policies": [], "globalPolicies": []}
    assert master_api("get", "acme/client-policies/profiles").json() == {"profiles": []}
    assert master_api("get", "acme/client-policies/profiles", **{"include-global-profiles": "true"}).json() == {
        "profiles": [], "globalProfiles": []}


def test_empty_documents_accepted(master_api, acme):  # noqa: F811
    assert master_api("put", "acme/client-policies/policies", {"policies": []}).status_code == 204
    assert master_api("put", "acme/client-policies/profiles", {"profiles": []}).status_code == 204


def test_policy_refused_never_ignored(master_api, acme):  # noqa: F811
    resp = master_api("put", "acme/client-policies/policies", FAPI2_POLICY)
    assert resp.status_code == 400
    assert resp.json() == {"errorMessage": "policies[0]: client policies are not supported by this server: "
                                           "refused rather than leaving its clients unprotected"}
    assert master_api("get", "acme/client-policies/policies").json() == {"policies": []}
    resp = master_api("put", "acme/client-policies/policies", ["not an object"])
    assert resp.status_code == 400


def test_profile_refused_never_ignored(master_api, acme):  # noqa: F811
    resp = master_api("put", "acme/client-policies/profiles", {"profiles": [
        {"name": "p", "executors": [{"executor": "pkce-enforcer", "configuration": {"auto-configure": True}}]}]})
    assert resp.status_code == 400
    assert resp.json() == {"errorMessage": "client profiles are not supported by this server"}


def test_roles(acme):  # noqa: F811
    viewer = realm_admin(acme, "viewer", "view-realm")
    assert viewer("get", "acme/client-policies/policies").status_code == 200
    assert viewer("get", "acme/client-policies/profiles").status_code == 200
    assert viewer("put", "acme/client-policies/policies", {"policies": []}).status_code == 403
    assert viewer("put", "acme/client-policies/profiles", {"profiles": []}).status_code == 403
    nobody = realm_admin(acme, "nobody")
    assert nobody("get", "acme/client-policies/policies").status_code == 403


def test_realm_update_with_a_policy_refused(master_api, acme):  # noqa: F811
    """The realm's own PUT carries clientPolicies too: refused there as well, never dropped with 204."""
    resp = master_api("put", "acme", {"clientPolicies": FAPI2_POLICY, "displayName": "changed"})
    assert resp.status_code == 400
    assert "client policies are not supported" in resp.json()["errorMessage"]
    assert master_api("get", "acme").json().get("displayName") != "changed"
    assert master_api("put", "acme", {"clientPolicies": {"policies": []}}).status_code == 204
