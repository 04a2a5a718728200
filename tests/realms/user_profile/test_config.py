"""The UPConfig: Admin API users/profile (GET, PUT refusing what the server cannot honour),
users/profile/metadata, and the component in a realm import and export."""
import json
from pathlib import Path

import pytest

from realms.representation import export_realm, import_realm
from realms.representation.fields import RepresentationError
from realms.users.profile import config as upconfig
from tests.realms.test_admin_rest_api import realm_admin

from .conftest import DEPARTMENT, profile_with

pytestmark = pytest.mark.django_db
FGAP = Path(__file__).resolve().parents[2] / "data" / "keycloak" / "keycloak-fgap-realm-kc26-full-export.json"


def test_a_realm_without_a_stored_profile_answers_keycloaks_default(acme, admin):
    resp = admin("get", "acme/users/profile")
    assert resp.status_code == 200
    assert resp.json() == upconfig.DEFAULT


def test_put_stores_the_profile_and_metadata_follows(acme, admin):
    config = profile_with(DEPARTMENT, unmanagedAttributePolicy="ADMIN_VIEW")
    resp = admin("put", "acme/users/profile", config)
    assert resp.status_code == 200, resp.content
    assert resp.json() == config
    assert admin("get", "acme/users/profile").json() == config
    meta = admin("get", "acme/users/profile/metadata").json()
    department = next(a for a in meta["attributes"] if a["name"] == "department")
    # required of users only: the admin form does not require it
    assert department == {"name": "department", "displayName": "Department", "required": False, "readOnly": False,
                          "validators": DEPARTMENT["validations"], "multivalued": False, "group": "work",
                          "annotations": {"inputHelperTextBefore": "Your team"}}
    assert meta["groups"] == [{"name": "work", "displayHeader": "Work", "displayDescription": "Where you work"}]


@pytest.mark.parametrize("change, message", [
    ({"validations": {"no-such": {}}}, "unknown validator 'no-such'"),
    ({"validations": {"length": {"min": "three"}}}, "'min' must be an integer"),
    ({"validations": {"length": {"minimum": 3}}}, "unknown option(s) minimum"),
    ({"validations": {"pattern": {"pattern": "("}}}, "not a valid regular expression"),
    ({"validations": {"options": {}}}, "'options' must list the allowed values"),
    ({"group": "nowhere"}, "group 'nowhere' is not defined"),
    ({"permissions": {"view": ["everyone"]}}, "only user and admin are allowed"),
    ({"required": {"roles": ["user"], "when": "always"}}, "unknown field(s) when"),
    ({"defaultValue": "x"}, "unknown field(s) defaultValue"),
])
def test_put_refuses_what_it_cannot_honour(acme, admin, change, message):
    resp = admin("put", "acme/users/profile", profile_with({**DEPARTMENT, **change}))
    assert resp.status_code == 400
    assert message in resp.json()["errorMessage"]
    assert upconfig.stored(acme) is None  # nothing stored


def test_put_refuses_removing_username_or_a_bad_policy(acme, admin):
    config = profile_with()
    config["attributes"] = [a for a in config["attributes"] if a["name"] != "email"]
    assert admin("put", "acme/users/profile", config).json() == {
        "errorMessage": "the attribute 'email' cannot be removed"}
    resp = admin("put", "acme/users/profile", profile_with(unmanagedAttributePolicy="SOMETIMES"))
    assert "unmanagedAttributePolicy" in resp.json()["errorMessage"]


def test_only_realm_managers_replace_the_profile(acme):
    viewer = realm_admin(acme, "viewer", "view-users")
    assert viewer("get", "acme/users/profile").status_code == 200
    assert viewer("put", "acme/users/profile", profile_with()).status_code == 403


def test_the_fgap_export_profile_round_trips(db):
    data = json.loads(FGAP.read_text())
    result = import_realm(data)
    assert not [w for w in result.warnings if upconfig.PROVIDER_TYPE in w]
    given = data["components"][upconfig.PROVIDER_TYPE][0]
    exported = export_realm(result.realm)["components"][upconfig.PROVIDER_TYPE]
    assert len(exported) == 1 and exported[0]["id"] == given["id"]
    assert json.loads(exported[0]["config"][upconfig.CONFIG_KEY][0]) == json.loads(
        given["config"][upconfig.CONFIG_KEY][0])


def test_an_import_refuses_a_profile_it_cannot_honour(db):
    config = profile_with({**DEPARTMENT, "validations": {"phone-number": {}}})
    data = {"realm": "bad-profile", "components": {upconfig.PROVIDER_TYPE: [
        {"providerId": "declarative-user-profile", "config": {upconfig.CONFIG_KEY: [json.dumps(config)]}}]}}
    with pytest.raises(RepresentationError, match="unknown validator 'phone-number'"):
        import_realm(data)
