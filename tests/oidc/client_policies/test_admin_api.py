"""Admin API ``client-policies/policies`` and ``/profiles``: Keycloak's documents read and
replaced, global profiles offered, refusals answered 400 ``{"errorMessage": ...}`` and nothing
changed; the realm's own PUT carries both too and keeps them from plain attributes."""
import pytest

from tests.realms.test_admin_rest_api import PASSWORD, acme, master_api, realm_admin  # noqa: F401 (fixtures)

from .test_import import FAPI2_POLICY, OWN_POLICY, OWN_PROFILES

pytestmark = pytest.mark.django_db


def test_read_empty_documents_and_global_profiles(master_api, acme):  # noqa: F811
    assert master_api("get", "acme/client-policies/policies").json() == {"policies": []}
    assert master_api("get", "acme/client-policies/policies", **{"include-global-policies": "true"}).json() == {
        "policies": [], "globalPolicies": []}
    assert master_api("get", "acme/client-policies/profiles").json() == {"profiles": []}
    body = master_api("get", "acme/client-policies/profiles", **{"include-global-profiles": "true"}).json()
    assert body["profiles"] == []
    assert [p["name"] for p in body["globalProfiles"]] == [
        "fapi-1-baseline", "fapi-2-security-profile", "fapi-2-message-signing", "fapi-2-dpop-security-profile",
        "fapi-2-dpop-message-signing"]
    fapi2 = body["globalProfiles"][1]
    assert [e["executor"] for e in fapi2["executors"]] == [
        "confidential-client", "secure-client-authenticator", "secure-client-uris", "secure-signature-algorithm",
        "secure-signature-algorithm-signed-jwt", "consent-required", "full-scope-disabled", "reject-implicit-grant",
        "holder-of-key-enforcer", "pkce-enforcer", "secure-client-authentication-assertion", "secure-par-content"]


def test_put_and_get(master_api, acme):  # noqa: F811
    assert master_api("put", "acme/client-policies/profiles", OWN_PROFILES).status_code == 204
    assert master_api("put", "acme/client-policies/policies", OWN_POLICY).status_code == 204
    assert master_api("get", "acme/client-policies/profiles").json() == OWN_PROFILES
    assert master_api("get", "acme/client-policies/policies").json() == OWN_POLICY
    # A profile a policy uses cannot go away under it.
    resp = master_api("put", "acme/client-policies/profiles", {"profiles": []})
    assert resp.status_code == 400
    assert resp.json() == {"errorMessage": "profiles: client profile 'pkce-only' is used by client policy "
                                           "'public-pkce'"}
    assert master_api("put", "acme/client-policies/policies", FAPI2_POLICY).status_code == 204
    assert master_api("put", "acme/client-policies/profiles", {"profiles": []}).status_code == 204
    assert master_api("get", "acme/client-policies/policies").json()["policies"][0]["name"] == "fapi2"


def test_refusals_change_nothing(master_api, acme):  # noqa: F811
    resp = master_api("put", "acme/client-policies/policies", {"policies": [
        {"name": "p", "conditions": [{"condition": "no-such-condition"}], "profiles": []}]})
    assert resp.status_code == 400
    assert resp.json()["errorMessage"].startswith(
        "policies[0].conditions[0].condition: the proposed client policy contains the condition with its invalid "
        "configuration: 'no-such-condition' is not a condition of this server (it has any-client,")
    resp = master_api("put", "acme/client-policies/policies", {"policies": [{"name": "p", "profiles": ["nope"]}]})
    assert resp.json() == {"errorMessage": "policies[0].profiles[0]: referring not existing client profile not allowed: 'nope'"}
    resp = master_api("put", "acme/client-policies/profiles", {"profiles": [
        {"name": "fapi-2-message-signing", "executors": []}]})
    assert resp.json() == {"errorMessage": "profiles[0].name: Proposed profile name duplicated as the name of some "
                                           "global profile: 'fapi-2-message-signing'"}
    resp = master_api("put", "acme/client-policies/profiles", {"profiles": [
        {"name": "p", "executors": [{"executor": "reject-ropc-grant"}]}]})
    assert resp.status_code == 400 and "'reject-ropc-grant' is not an executor" in resp.json()["errorMessage"]
    assert master_api("put", "acme/client-policies/policies", ["not an object"]).status_code == 400
    assert master_api("get", "acme/client-policies/policies").json() == {"policies": []}
    assert master_api("get", "acme/client-policies/profiles").json() == {"profiles": []}


def test_roles(acme):  # noqa: F811
    viewer = realm_admin(acme, "viewer", "view-realm")
    assert viewer("get", "acme/client-policies/policies").status_code == 200
    assert viewer("get", "acme/client-policies/profiles").status_code == 200
    assert viewer("put", "acme/client-policies/policies", {"policies": []}).status_code == 403
    assert viewer("put", "acme/client-policies/profiles", {"profiles": []}).status_code == 403
    nobody = realm_admin(acme, "nobody")
    assert nobody("get", "acme/client-policies/policies").status_code == 403


def test_realm_update_carries_them(master_api, acme):  # noqa: F811
    resp = master_api("put", "acme", {"clientPolicies": {"policies": [{"name": "p", "profiles": ["nope"]}]},
                                      "displayName": "changed"})
    assert resp.status_code == 400
    assert resp.json() == {"errorMessage": "clientPolicies.policies[0].profiles[0]: referring not existing client "
                                           "profile not allowed: 'nope'"}
    assert master_api("get", "acme").json().get("displayName") != "changed"
    assert master_api("put", "acme", {"clientProfiles": OWN_PROFILES, "clientPolicies": OWN_POLICY}).status_code == 204
    assert master_api("get", "acme/client-policies/policies").json() == OWN_POLICY
    # The realm's attributes written back as read never touch the stored documents.
    attributes = master_api("get", "acme").json()["attributes"]
    assert "client-policies.policies" not in attributes
    assert master_api("put", "acme", {"attributes": {**attributes, "client-policies.policies": "{}"}}).status_code == 204
    assert master_api("get", "acme/client-policies/policies").json() == OWN_POLICY


def test_a_policy_written_takes_effect_on_the_next_request(master_api, acme, client):  # noqa: F811
    assert master_api("post", "acme/clients", {"clientId": "web", "redirectUris": ["https://web.example/cb"],
                                               "publicClient": True}).status_code == 201
    params = {"client_id": "web", "response_type": "code", "redirect_uri": "https://web.example/cb",
              "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", "code_challenge_method": "S256"}
    auth = "/realms/acme/protocol/openid-connect/auth"
    assert client.get(auth, params).status_code == 200  # the realm's configuration cached
    assert master_api("put", "acme/client-policies/profiles", {"profiles": [
        {"name": "par", "executors": [{"executor": "secure-par-content"}]}]}).status_code == 204
    assert master_api("put", "acme/client-policies/policies", {"policies": [
        {"name": "all", "enabled": True, "conditions": [{"condition": "any-client"}], "profiles": ["par"]}]}
    ).status_code == 204
    answer = client.get(auth, params)
    assert answer.status_code == 302 and "request_uri+not+included." in answer["Location"]
