"""Every app's errors derive from the app's one base (docs/decisions/0061), keeping the
ValueError-ness their callers catch; an error of ``realms`` that escapes an Admin API or SCIM view
is answered in the surface's shape, never a 500; the places a sign-in waits are named values whose
stored form is the one authentication sessions in flight hold."""
import importlib
import inspect
from pathlib import Path

import pytest
from django.test import RequestFactory
from rest_framework.exceptions import APIException
from rest_framework.request import Request

import ambassador.errors
import federation.errors
import idp.errors
import oidc.errors
import realms.errors
import saml.errors
import webhooks.errors
from realms.admin_api import errors as api_errors
from realms.credentials.password_policy import PasswordPolicyError, PolicyConfigError
from realms.scim import errors as scim_errors
from realms.signin.engine import Stop
from realms.users.organizations import OrganizationError
from realms.users.storage import Unavailable

ROOT = Path(__file__).resolve().parents[2]
BASES = {"realms": realms.errors.RealmsError, "oidc": oidc.errors.OidcError, "saml": saml.errors.SamlError,
         "federation": federation.errors.FederationError, "webhooks": webhooks.errors.WebhooksError,
         "ambassador": ambassador.errors.AmbassadorError, "idp": idp.errors.IdpError}


def _declared_errors(app):
    """The exception classes the app's modules declare (imported, so inheritance is Python's own)."""
    found = []
    for path in sorted((ROOT / app).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if {"migrations", "management", "settings"} & set(parts) or parts[-1] in ("__main__", "wsgi", "asgi"):
            continue
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        module = importlib.import_module(name)
        found += [cls for _, cls in inspect.getmembers(module, inspect.isclass)
                  if cls.__module__ == name and issubclass(cls, BaseException)]
    return found


@pytest.mark.parametrize("app", sorted(BASES))
def test_every_error_of_an_app_derives_from_its_base(app):
    declared = _declared_errors(app)
    assert declared, app
    # DRF's exceptions of the Admin API are its answers (the handler's output), not errors of realms.
    strays = [f"{cls.__module__}.{cls.__qualname__}" for cls in declared
              if not issubclass(cls, BASES[app]) and not issubclass(cls, APIException)]
    assert strays == []


def test_the_errors_callers_catch_as_value_errors_still_are():
    from federation.ldap.config import ConfigError
    from realms.credentials.webauthn import CeremonyError
    from realms.representation.bootstrap import BootstrapError
    from realms.scim.filters import FilterError
    from realms.signin.loa import UnknownAcr
    from realms.users.storage import InvalidConfig
    from webhooks.services import WebhookError
    from webhooks.signing import InvalidSecret

    for cls in (PasswordPolicyError, PolicyConfigError, CeremonyError, InvalidConfig, FilterError, BootstrapError,
                UnknownAcr, ConfigError, WebhookError, InvalidSecret):
        assert issubclass(cls, ValueError), cls


def _context(method="PUT"):
    return {"request": Request(RequestFactory().generic(method, "/x"))}


def test_the_admin_api_answers_an_escaped_realms_error_as_keycloaks_error_representation():
    handle = api_errors.exception_handler
    refused = handle(realms.errors.StoreRefused("User is read only!"), _context())
    assert (refused.status_code, refused.data) == (400, {"errorMessage": "User is read only!"})
    directory = handle(realms.errors.StoreRefused("Could not update user!", "LDAP error: Invalid syntax"), _context())
    assert directory.data == {"errorMessage": "Could not update user!"}  # Keycloak's words; the directory's are logged
    unreachable = handle(Unavailable("component-id"), _context())
    assert (unreachable.status_code, unreachable.data) == (400, {"errorMessage": "Could not reach the user's directory"})
    other = handle(OrganizationError("Organization not found"), _context())
    assert (other.status_code, other.data) == (400, {"errorMessage": "Organization not found"})
    crash = handle(RuntimeError("a bug"), _context())
    assert crash.status_code == 500 and "a bug" not in str(crash.data)  # the unexpected still tells nothing


def test_scim_answers_an_escaped_realms_error_in_its_error_body():
    handle = scim_errors.exception_handler
    refused = handle(realms.errors.StoreRefused("Could not update user!", "LDAP error: Invalid syntax"), _context())
    assert (refused.status_code, refused.data["detail"], refused.data["status"]) == (
        400, "LDAP error: Invalid syntax", "400")  # SCIM says what the directory said
    assert handle(Unavailable("component-id"), _context()).status_code == 503
    other = handle(OrganizationError("Organization not found"), _context())
    assert (other.status_code, other.data["detail"]) == (400, "Organization not found")
    assert handle(api_errors.Invalid("x"), _context()).data["detail"] == "x"  # DRF's refusals in SCIM's body too
    assert handle(RuntimeError("a bug"), _context()) is None


def test_the_places_a_sign_in_waits_are_named_and_stored_as_before():
    # Authentication sessions in flight hold these forms: changing them would break every
    # sign-in paused at a required action or an application-initiated action during an upgrade.
    assert Stop.execution("0.1").key == "0.1"
    assert Stop.required_action("UPDATE_PASSWORD").key == "required:UPDATE_PASSWORD"
    assert Stop.application_initiated("CONFIGURE_TOTP").key == "aia:CONFIGURE_TOTP"
    assert Stop.required_action("x") != Stop.application_initiated("x")
