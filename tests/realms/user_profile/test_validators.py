"""Each built-in validator: its config checked when the profile is stored, its verdict on values
with Keycloak's message key and params; and the profile's rules that depend on the context
(required by role and by scope, scope selectors, multivalued)."""
import pytest

from realms.users import profile
from realms.users.profile import config as upconfig
from realms.users.profile.validators import ConfigError, check, validate

from .conftest import profile_with

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("name, config, value, expected", [
    ("length", {"min": 2, "max": 4}, "a", ("error-invalid-length", (2, 4))),
    ("length", {"min": 2}, "a", ("error-invalid-length-too-short", (2, None))),
    ("length", {"max": 2}, "abc", ("error-invalid-length-too-long", (None, 2))),
    ("length", {"max": 2}, " ab ", None),  # trimmed
    ("length", {"max": 2, "trim-disabled": "true"}, " ab ", ("error-invalid-length-too-long", (None, 2))),
    ("pattern", {"pattern": "^[0-9]+$"}, "12a", ("error-pattern-no-match", ("^[0-9]+$",))),
    ("pattern", {"pattern": "^[0-9]+$", "error-message": "onlyDigits"}, "x", ("onlyDigits", ("^[0-9]+$",))),
    ("pattern", {"pattern": "^[0-9]+$"}, "123", None),
    ("email", {}, "not-an-address", ("error-invalid-email", ())),
    ("email", {"max-local-length": 3}, "abcd@example.com", ("error-invalid-email", ())),
    ("email", {}, "a@example.com", None),
    ("integer", {}, "1.5", ("error-invalid-number", ())),
    ("integer", {"min": 1, "max": 9}, "10", ("error-number-out-of-range", (1, 9))),
    ("integer", {"min": 1}, "0", ("error-number-out-of-range-too-small", (1, None))),
    ("integer", {"max": 9}, "10", ("error-number-out-of-range-too-big", (None, 9))),
    ("double", {"max": 1.5}, "1.6", ("error-number-out-of-range-too-big", (None, 1.5))),
    ("double", {}, "abc", ("error-invalid-number", ())),
    ("uri", {}, "https://example.com/x", None),
    ("uri", {"allowedSchemes": ["https"]}, "http://example.com", ("error-invalid-uri-scheme", ())),
    ("uri", {"allowFragment": False}, "https://example.com/#top", ("error-invalid-uri-fragment", ())),
    ("uri", {}, "example.com/x", ("error-invalid-uri", ())),
    ("uri", {"requireValidUrl": False}, "example.com/x", None),
    ("options", {"options": ["a", "b"]}, "c", ("error-invalid-value", ())),
    ("options", {"options": ["a", "b"]}, "b", None),
    ("local-date", {}, "2026-13-01", ("error-invalid-date", ())),
    ("local-date", {}, "2026-11-28", None),
    ("person-name-prohibited-characters", {}, "Bob<", ("error-person-name-invalid-character", ())),
    ("person-name-prohibited-characters", {}, "Zoë O'Neil", None),
    ("username-prohibited-characters", {}, "bob smith", ("error-username-invalid-character", ())),
    ("up-username-not-idn-homograph", {}, "раураl", ("error-username-invalid-character", ())),
    ("up-username-not-idn-homograph", {}, "paypal", None),
])
def test_builtin_validator(name, config, value, expected):
    check(name, config, "test")
    assert validate(name, [value], config) == ([expected] if expected else [])


def test_empty_values_are_ignored_unless_asked():
    assert validate("length", [""], {"min": 2}) == []
    assert validate("length", [""], {"min": 2, "ignore.empty.value": False}) == [
        ("error-invalid-length-too-short", (2, None))]


def test_multivalued_counts_the_values():
    config = {"min": 1, "max": 2}
    check("multivalued", config, "test")
    assert validate("multivalued", ["a", "b", "c"], config) == [("error-invalid-multivalued-size", (1, 2))]
    assert validate("multivalued", ["a", "b"], config) == []


@pytest.mark.parametrize("name, config, message", [
    ("multivalued", {"min": 1}, "'max' is required"),
    ("length", {}, "'min' or 'max' is required"),
    ("integer", {"min": "x"}, "'min' must be an integer"),
    ("double", {"max": "x"}, "'max' must be a number"),
    ("uri", {"allowFragment": "maybe"}, "'allowFragment' must be true or false"),
    ("email", {"ignore.empty.value": "nope"}, "'ignore.empty.value' must be true or false"),
])
def test_a_bad_validator_config_is_refused(name, config, message):
    with pytest.raises(ConfigError, match=message):
        check(name, config, "test")


def test_required_by_scope_and_scope_selectors_apply_in_the_login_pages_only(acme):
    phone = {"name": "phone", "required": {"scopes": ["phone"]}, "permissions": {"view": ["user"], "edit": ["user"]}}
    badge = {"name": "badge", "selector": {"scopes": ["work"]}, "permissions": {"view": ["user"], "edit": ["user"]}}
    upconfig.store(acme, profile_with(phone, badge))
    plain = profile.Profile(acme, profile.UPDATE_PROFILE, ["openid"])
    assert "badge" not in plain.by_name and not plain.by_name["phone"].required
    asked = profile.Profile(acme, profile.UPDATE_PROFILE, ["openid", "phone", "work"])
    assert "badge" in asked.by_name and asked.by_name["phone"].required
    account = profile.Profile(acme, profile.ACCOUNT)
    assert "badge" in account.by_name and not account.by_name["phone"].required


def test_a_single_valued_attribute_takes_one_value_and_a_multivalued_many(acme):
    tags = {"name": "tags", "multivalued": True, "validations": {"multivalued": {"max": 2}},
            "permissions": {"view": ["admin"], "edit": ["admin"]}}
    upconfig.store(acme, profile_with(tags, {"name": "nick", "permissions": {"edit": ["admin"]}}))
    admin = profile.Profile(acme, profile.USER_API)
    assert admin.check({"username": ["bob"], "email": [""], "tags": ["a", "b"], "nick": ["x"]}) == []
    errors = dict(admin.check({"username": ["bob"], "email": [""], "tags": ["a", "b", "c"], "nick": ["x", "y"]}))
    assert (errors["tags"].key, errors["tags"].args) == ("error-invalid-multivalued-size", ("tags", 0, 2))
    assert errors["nick"].key == "error-invalid-value"
    # the user sees neither (admin-only view and edit)
    assert not {"tags", "nick"} & set(profile.Profile(acme, profile.ACCOUNT).by_name)
