"""Client policies at realm import: until conditions and executors are enforced here, a realm with
a client policy is refused, never imported with its clients unprotected."""
import pytest

from realms.models import Realm
from realms.representation import RepresentationError, import_realm

pytestmark = pytest.mark.django_db

FAPI2_POLICY = {"policies": [{
    "name": "fapi2", "enabled": True,
    "conditions": [{"condition": "any-client", "configuration": {}}],
    "profiles": ["fapi-2-security-profile"],
}]}


def test_realm_with_a_client_policy_is_refused():
    with pytest.raises(RepresentationError) as exc:
        import_realm({"realm": "cp-refused", "clientPolicies": FAPI2_POLICY})
    assert "clientPolicies.policies[0]" in str(exc.value)
    assert "refused rather than leaving its clients unprotected" in str(exc.value)
    assert not Realm.objects.filter(name="cp-refused").exists()


def test_empty_client_policies_import_as_before():
    result = import_realm({"realm": "cp-empty", "clientPolicies": {"policies": []},
                           "clientProfiles": {"profiles": []}})
    assert result.realm.name == "cp-empty"
    assert "clientPolicies: not supported, not imported" in result.warnings


def test_malformed_client_policies_are_refused():
    with pytest.raises(RepresentationError, match="clientPolicies"):
        import_realm({"realm": "cp-bad", "clientPolicies": ["not", "an", "object"]})
