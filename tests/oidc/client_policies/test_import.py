"""Client policies and profiles at realm import and export: stored as Keycloak stores them (two
realm attributes never shown as plain ones), round-tripped, and refused when they name a
condition, executor or profile this server does not have."""
import pytest

from realms.representation import RepresentationError, export_realm, import_realm

pytestmark = pytest.mark.django_db

FAPI2_POLICY = {"policies": [{
    "name": "fapi2", "enabled": True,
    "conditions": [{"condition": "client-roles", "configuration": {"roles": ["fapi"]}}],
    "profiles": ["fapi-2-dpop-security-profile"],
}]}
OWN_PROFILES = {"profiles": [{"name": "pkce-only", "description": "PKCE S256",
                              "executors": [{"executor": "pkce-enforcer", "configuration": {"auto-configure": True}}]}]}
OWN_POLICY = {"policies": [{"name": "public-pkce", "enabled": False, "description": "d",
                            "conditions": [{"condition": "client-access-type", "configuration": {"type": ["public"]}}],
                            "profiles": ["pkce-only"]}]}


def test_round_trip():
    realm = import_realm({"realm": "cp", "clientPolicies": {"policies": FAPI2_POLICY["policies"] + OWN_POLICY["policies"]},
                          "clientProfiles": OWN_PROFILES, "attributes": {"frontendUrl": "https://x.example"}}).realm
    rep = export_realm(realm)
    assert rep["clientProfiles"] == {"profiles": [{
        "name": "pkce-only", "description": "PKCE S256",
        "executors": [{"executor": "pkce-enforcer", "configuration": {"auto-configure": True}}]}]}
    assert [p["name"] for p in rep["clientPolicies"]["policies"]] == ["fapi2", "public-pkce"]
    assert rep["clientPolicies"]["policies"][1]["enabled"] is False
    assert rep["clientPolicies"]["policies"][0]["conditions"] == [
        {"condition": "client-roles", "configuration": {"roles": ["fapi"]}}]
    # Not twice: the raw attributes stay inside.
    assert rep["attributes"] == {"frontendUrl": "https://x.example"}
    again = import_realm({**rep, "realm": "cp2", "id": None}).realm
    assert export_realm(again)["clientPolicies"] == rep["clientPolicies"]


def test_empty_sections_import_without_warning():
    result = import_realm({"realm": "cp-empty", "clientPolicies": {"policies": []},
                           "clientProfiles": {"profiles": []}})
    assert not [w for w in result.warnings if "client" in w.lower()]
    assert export_realm(result.realm)["clientPolicies"] == {"policies": []}


def test_raw_attributes_do_not_smuggle_policies():
    realm = import_realm({"realm": "cp-raw", "attributes": {
        "client-policies.policies": '{"policies":[{"name":"x","enabled":true,"conditions":'
                                    '[{"condition":"nope"}],"profiles":[]}]}'}}).realm
    assert "client-policies.policies" not in realm.attributes


@pytest.mark.parametrize(("section", "message"), [
    ({"clientPolicies": {"policies": [{"name": "p", "conditions": [{"condition": "client-updater-source-host"}]}]}},
     "clientPolicies.policies[0].conditions[0].condition: the proposed client policy contains the condition with "
     "its invalid configuration: 'client-updater-source-host' is not a condition"),
    ({"clientProfiles": {"profiles": [{"name": "p", "executors": [{"executor": "secure-ciba-session"}]}]}},
     "clientProfiles.profiles[0].executors[0].executor: proposed client profile contains the executor, which does "
     "not have valid provider, or has invalid configuration: 'secure-ciba-session' is not an executor"),
    ({"clientPolicies": {"policies": [{"name": "p", "profiles": ["missing"]}]}},
     "clientPolicies.policies[0].profiles[0]: referring not existing client profile not allowed: 'missing'"),
    ({"clientProfiles": {"profiles": [{"name": "fapi-2-security-profile"}]}},
     "clientProfiles.profiles[0].name: Proposed profile name duplicated as the name of some global profile"),
    ({"clientProfiles": {"profiles": [{"name": "p", "executors": [
        {"executor": "pkce-enforcer", "configuration": {"auto-configure": True, "bogus": 1}}]}]}},
     "clientProfiles.profiles[0].executors[0].configuration.bogus: not a setting of this executor"),
    ({"clientPolicies": {"policies": [{"name": "p", "conditions": [
        {"condition": "client-access-type", "configuration": {"type": ["secret"]}}]}]}},
     "clientPolicies.policies[0].conditions[0].configuration.type: unsupported value 'secret'"),
    ({"clientPolicies": ["not", "an", "object"]}, "clientPolicies"),
])
def test_refused_never_ignored(section, message):
    with pytest.raises(RepresentationError) as exc:
        import_realm({"realm": "cp-bad", **section})
    assert str(exc.value).startswith(message), str(exc.value)
