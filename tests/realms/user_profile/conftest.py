"""Fixtures of the user-profile tests: the realm "acme" with a custom attribute ``department``
(required of users, a pattern and a length), grouped under "work", and an administrator."""
import copy

import pytest

from realms.data import realm_cache
from realms.users.profile import config as upconfig
from tests.realms.test_admin_rest_api import realm_admin

DEPARTMENT = {"name": "department", "displayName": "Department",
              "validations": {"length": {"min": 2, "max": 20}, "pattern": {"pattern": "^[A-Z][a-z]+$"}},
              "required": {"roles": ["user"]}, "permissions": {"view": ["admin", "user"], "edit": ["admin", "user"]},
              "group": "work", "annotations": {"inputHelperTextBefore": "Your team"}}


def profile_with(*attributes, **top):
    config = copy.deepcopy(upconfig.DEFAULT)
    config["attributes"] += list(attributes)
    config["groups"].append({"name": "work", "displayHeader": "Work", "displayDescription": "Where you work"})
    config.update(top)
    return config


@pytest.fixture
def acme(realm):
    """The realm "acme" of tests/realms/conftest.py (with its client web-app and user bob)."""
    realm_cache.clear()  # an "acme" of an earlier test (rolled back) may still be cached by name
    return realm


@pytest.fixture
def profiled(acme, admin):
    # after the administrator's sign-in: VERIFY_PROFILE would stop it (no department), as in Keycloak
    upconfig.store(acme, profile_with(DEPARTMENT))
    return acme


@pytest.fixture
def admin(acme):
    return realm_admin(acme, "realm-boss", "manage-realm", "manage-users", "view-users")
