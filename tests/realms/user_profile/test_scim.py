"""SCIM provisioning under the realm's user profile: what SCIM writes (userName, names, e-mail) is
checked by the profile's validators, and an attribute the profile requires of administrators,
which SCIM does not carry, refuses the write with the profile's words."""
import pytest

from realms.users.profile import config as upconfig
from tests.realms.test_scim import USER, hr, scim  # noqa: F401 (fixtures)

from .conftest import profile_with

pytestmark = pytest.mark.django_db


def test_scim_writes_are_checked_by_the_profile(hr, scim):  # noqa: F811
    config = profile_with()
    last = next(a for a in config["attributes"] if a["name"] == "lastName")
    last["validations"]["pattern"] = {"pattern": "^[A-Z].*", "error-message": "error-invalid-value"}
    upconfig.store(hr, config)
    refused = scim("post", "Users", {"schemas": [USER], "userName": "ann", "name": {"familyName": "smith"}})
    assert refused.status_code == 400
    assert refused.json()["detail"] == "name.familyName: Invalid value."
    assert refused.json()["scimType"] == "invalidValue"
    short = scim("post", "Users", {"schemas": [USER], "userName": "an"})
    assert short.json()["detail"] == "userName: Length must be between 3 and 255."
    assert scim("post", "Users", {"schemas": [USER], "userName": "ann", "name": {"familyName": "Smith"}}
                ).status_code == 201


def test_an_attribute_required_of_administrators_refuses_scim_creation(hr, scim):  # noqa: F811
    upconfig.store(hr, profile_with({"name": "employeeNumber", "displayName": "Employee number",
                                     "required": {"roles": ["admin"]},
                                     "permissions": {"view": ["admin"], "edit": ["admin"]}}))
    refused = scim("post", "Users", {"schemas": [USER], "userName": "bea"})
    assert refused.status_code == 400
    assert refused.json()["detail"] == "employeeNumber: Please specify this field."
