"""Stored sign-in flows (issue 12, item 1; docs/decisions/0025): Keycloak's full exports
round-trip their flows, configs, required actions and bindings; a realm's flows changed through
``realms.administration.flow_admin`` (what the Admin API and the console call) behave the same after an export
and a re-import; every requirement and condition takes effect; the realm's required-action
settings take effect; the hot path reads no flow rows."""
import base64
import copy
import html
import json
import re

import pyotp
import pytest
from django.db import connection
from django.test import Client as HttpClient
from django.test.utils import CaptureQueriesContext

from realms.administration import flow_admin
from realms.administration.flow_admin import FlowError
from realms.credentials import get_credential_type
from realms.data import realm_cache
from realms.models import (
    AuthenticationExecution,
    AuthenticationFlow,
    Credential,
    Event,
    Group,
    Realm,
    RequiredActionProvider,
    Role,
    User,
)
from realms.representation import RepresentationError, export_realm, import_realm
from realms.signin import flows
from realms.users.accounts import create_user
from tests.oidc.browser.conftest import PASSWORD
from tests.realms.test_import_export import load
from tests.realms.test_signin import AUTH, PARAMS, password_grant, redirect_query

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_caches")]


FULL_EXPORTS = ["keycloak-fgap-realm-kc26-full-export.json", "quickstarts-kc9-full-export-realm-b.json"]
BINDING_KEYS = ("browserFlow", "registrationFlow", "directGrantFlow", "resetCredentialsFlow",
                "clientAuthenticationFlow", "dockerAuthenticationFlow", "firstBrokerLoginFlow")
SECRET = "hJ7kQ2pXw9LmN4vR8sTz"


def app_totp():
    return pyotp.TOTP(base64.b32encode(SECRET.encode()).decode())


def add_otp(user):
    return get_credential_type(Credential.OTP).create(user, SECRET, label="phone")


def login_errors(realm):
    return list(Event.objects.filter(realm=realm, type="LOGIN_ERROR").order_by("time").values_list("error", flat=True))


def execution(realm, flow_alias, name):
    """The execution of ``flow_alias`` running step (or sub-flow) ``name``."""
    flow = AuthenticationFlow.objects.get(realm=realm, alias=flow_alias)
    return next(e for e in flow.executions.select_related("sub_flow")
                if e.authenticator == name or (e.sub_flow_id and e.sub_flow.alias == name))


def round_trip(realm):
    """Export the realm and import the export in its place (what a migration between servers
    does); the realm as re-imported."""
    data = json.loads(json.dumps(export_realm(realm)))
    realm_cache.clear()
    return import_realm(data, override=True).realm


def _contains(small, big, path=""):
    """Every key of ``small`` is in ``big`` with the same value (lists item by item)."""
    if isinstance(small, dict):
        assert isinstance(big, dict), path
        for key, value in small.items():
            assert key in big, f"{path}.{key} missing"
            _contains(value, big[key], f"{path}.{key}")
    elif isinstance(small, list):
        assert isinstance(big, list) and len(small) == len(big), path
        for i, (a, b) in enumerate(zip(small, big)):
            _contains(a, b, f"{path}[{i}]")
    else:
        assert small == big, f"{path}: {small!r} != {big!r}"


# --- Import and export ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", FULL_EXPORTS)
def test_full_exports_round_trip_flows_configs_required_actions_and_bindings(name):
    data = load(name)
    exported = export_realm(import_realm(copy.deepcopy(data)).realm)
    by_alias = {f["alias"]: f for f in exported["authenticationFlows"]}
    assert set(by_alias) == {f["alias"] for f in data["authenticationFlows"]}  # nothing added, nothing lost
    for flow in data["authenticationFlows"]:
        _contains(flow, by_alias[flow["alias"]], flow["alias"])
    assert exported["authenticatorConfig"] == data["authenticatorConfig"]
    assert exported["requiredActions"] == data["requiredActions"]
    for key in BINDING_KEYS:
        if key in data:
            assert exported[key] == data[key]
    assert [c.get("authenticationFlowBindingOverrides", {}) for c in data["clients"]] == [
        next(x for x in exported["clients"] if x["clientId"] == c["clientId"])["authenticationFlowBindingOverrides"]
        for c in data["clients"]]
    if name.startswith("keycloak-fgap"):  # a Keycloak 26 export comes back exactly as it was
        assert exported["authenticationFlows"] == data["authenticationFlows"]


def test_kc9_export_gains_only_what_keycloak_26_adds_to_executions():
    data = load("quickstarts-kc9-full-export-realm-b.json")
    exported = export_realm(import_realm(data).realm)
    registration = next(f for f in exported["authenticationFlows"] if f["alias"] == "registration")
    assert registration["authenticationExecutions"] == [{
        "authenticator": "registration-page-form", "authenticatorFlow": True, "requirement": "REQUIRED",
        "priority": 10, "autheticatorFlow": True, "flowAlias": "registration form", "userSetupAllowed": False}]


def _realm_file(**extra):
    return {"realm": "acme", "enabled": True, "eventsEnabled": True,
            "clients": [{"clientId": "web-app", "secret": "secret-of-web-app", "publicClient": False,
                         "directAccessGrantsEnabled": True, "redirectUris": ["https://app.example/cb"]}],
            "users": [{"username": "bob", "enabled": True, "email": "bob@example.com",
                       "credentials": [{"type": "password", "value": PASSWORD}]}], **extra}


STRICT_GRANT = {"alias": "strict grant", "providerId": "basic-flow", "topLevel": True, "builtIn": False,
                "authenticationExecutions": [
                    {"authenticator": "direct-grant-validate-username", "requirement": "REQUIRED", "priority": 10,
                     "authenticatorFlow": False},
                    {"authenticator": "direct-grant-validate-password", "requirement": "REQUIRED", "priority": 20,
                     "authenticatorFlow": False},
                    {"authenticator": "acme-hardware-token", "requirement": "REQUIRED", "priority": 30,
                     "authenticatorFlow": False}]}


def test_a_flow_with_a_step_this_server_lacks_is_imported_reported_and_fails_closed(client):
    result = import_realm(_realm_file(directGrantFlow="strict grant", authenticationFlows=[STRICT_GRANT]))
    assert ("authenticationFlows[0].authenticationExecutions[2].authenticator: 'acme-hardware-token' is not "
            "available on this server: imported, the step fails closed at sign-in") in result.warnings
    # Built-in flows the file lacks are added, as Keycloak's migration adds them.
    assert {"browser", "direct grant", "clients", "first broker login"} <= set(
        AuthenticationFlow.objects.filter(realm=result.realm).values_list("alias", flat=True))
    response = password_grant(client, "bob", PASSWORD)
    assert response.status_code == 400 and response.json()["error"] == "invalid_grant"
    assert login_errors(result.realm) == ["required_step_unavailable"]


def test_a_client_override_names_the_flow_by_id_and_follows_a_new_id(client):
    flow = {**STRICT_GRANT, "id": "0b6c3f5e-strict"}
    data = _realm_file(authenticationFlows=[flow])
    data["clients"][0]["authenticationFlowBindingOverrides"] = {"direct_grant": "0b6c3f5e-strict"}
    import_realm(copy.deepcopy(data))
    assert password_grant(client, "bob", PASSWORD).status_code == 400  # the client's own (strict) flow
    # The same file under another name: its flow ids are taken, so the override follows the new id.
    other = import_realm({**copy.deepcopy(data), "realm": "acme-copy"}).realm
    override = other.client_set.get(client_id="web-app").authentication_flow_binding_overrides["direct_grant"]
    assert override != "0b6c3f5e-strict"
    assert AuthenticationFlow.objects.get(pk=override, realm=other).alias == "strict grant"


@pytest.mark.parametrize("change, message", [
    ({"directGrantFlow": "no such flow"}, "directGrantFlow: no authentication flow 'no such flow'"),
    ({"authenticationFlows": [{**STRICT_GRANT, "authenticationExecutions": [
        {"flowAlias": "missing", "authenticatorFlow": True, "requirement": "REQUIRED"}]}]},
     "authenticationFlows[0].authenticationExecutions[0].flowAlias: no flow 'missing'"),
    ({"authenticationFlows": [{**STRICT_GRANT, "authenticationExecutions": [
        {"authenticator": "auth-cookie", "requirement": "SOMETIMES"}]}]},
     "authenticationFlows[0].authenticationExecutions[0].requirement: expected one of"),
])
def test_bad_flow_references_are_refused_by_path(db, change, message):
    with pytest.raises(RepresentationError) as exc:
        import_realm(_realm_file(**change))
    assert str(exc.value).startswith(message)


# --- Behaviour, after a round trip ----------------------------------------------------------------

def _sign_in(http):
    page = http.get(AUTH, PARAMS)
    action = html.unescape(re.search(r'<form[^>]*action="([^"]+)"', page.content.decode()).group(1))
    return http.post(action, {"username": "bob", "password": PASSWORD})


def test_a_copied_browser_flow_with_otp_required_forces_otp_after_a_round_trip(client, realm, web_app, bob):
    assert "code" in redirect_query(_sign_in(HttpClient()))  # the built-in flow: the password is enough
    flow_admin.copy_flow(realm, flow_admin.flow_by_alias(realm, "browser"), "otp browser")
    flow_admin.set_requirement(execution(realm, "otp browser forms", "otp browser Browser - Conditional 2FA"),
                               "REQUIRED")
    flow_admin.set_requirement(execution(realm, "otp browser Browser - Conditional 2FA", "auth-otp-form"), "REQUIRED")
    flow_admin.bind(realm, "browser_flow", flow_admin.flow_by_alias(realm, "otp browser"))
    realm = round_trip(realm)
    assert realm.browser_flow == "otp browser"
    page = _sign_in(HttpClient())
    # bob has no code generator yet: he must set one up before any code is issued.
    assert page.status_code == 200 and 'id="kc-totp-settings-form"' in page.content.decode()
    assert User.objects.get(realm=realm, username="bob").required_actions == ["CONFIGURE_TOTP"]


def _grant_copy(realm, name="strict grant"):
    flow = flow_admin.copy_flow(realm, flow_admin.flow_by_alias(realm, "direct grant"), name)
    flow_admin.bind(realm, "direct_grant_flow", flow)
    return flow


def test_a_disabled_step_is_skipped(client, realm, web_app, bob):
    add_otp(bob)
    assert password_grant(client, "bob", PASSWORD).status_code == 400  # the OTP sub-flow applies
    _grant_copy(realm)
    flow_admin.set_requirement(execution(realm, "strict grant", "strict grant Direct Grant - Conditional OTP"),
                               "DISABLED")
    round_trip(realm)
    assert password_grant(client, "bob", PASSWORD).status_code == 200


def test_a_required_step_the_user_lacks_refuses(client, realm, web_app, bob):
    _grant_copy(realm)
    flow_admin.set_requirement(execution(realm, "strict grant", "strict grant Direct Grant - Conditional OTP"),
                               "REQUIRED")
    round_trip(realm)
    assert password_grant(client, "bob", PASSWORD).status_code == 400  # bob has no OTP: required all the same


def _conditional_otp_grant(realm, condition, config):
    """A direct grant whose OTP sub-flow runs only under ``condition`` (with ``config``)."""
    flow = _grant_copy(realm)
    sub, holder = flow_admin.add_sub_flow(realm, flow, "otp when")
    flow_admin.set_requirement(holder, "CONDITIONAL")
    old = execution(realm, "strict grant", "strict grant Direct Grant - Conditional OTP")
    flow_admin.delete_execution(old)
    cond = flow_admin.add_execution(realm, sub, condition)
    flow_admin.set_requirement(cond, "REQUIRED")
    if config:
        flow_admin.set_execution_config(realm, cond, f"{condition} config", config)
    otp = flow_admin.add_execution(realm, sub, "direct-grant-validate-otp")
    flow_admin.set_requirement(otp, "REQUIRED")
    return round_trip(realm)


def _needs_otp(client):
    response = password_grant(client, "bob", PASSWORD)
    return response.status_code == 400


def test_conditional_on_user_configured(client, realm, web_app, bob):
    _conditional_otp_grant(realm, "conditional-user-configured", None)
    assert not _needs_otp(client)
    add_otp(bob)
    assert _needs_otp(client)
    assert password_grant(client, "bob", PASSWORD, totp=app_totp().now()).status_code == 200


@pytest.mark.parametrize("negate", [False, True])
def test_conditional_on_user_role(client, realm, web_app, bob, negate):
    add_otp(bob)
    role = Role.objects.create(realm=realm, name="auditor")
    realm = _conditional_otp_grant(realm, "conditional-user-role",
                                   {"condUserRole": "auditor", "negate": str(negate).lower()})
    assert _needs_otp(client) is negate
    group = Group.objects.create(realm=realm, name="audit")  # a role through a group counts
    group.roles.add(Role.objects.get(realm=realm, name=role.name))
    User.objects.get(realm=realm, username="bob").groups.add(group)
    realm_cache.clear()
    assert _needs_otp(client) is not negate


def test_conditional_on_a_client_role_by_client_id_and_role(client, realm, web_app, bob):
    add_otp(bob)
    realm = _conditional_otp_grant(realm, "conditional-user-role", {"condUserRole": "account.manage-account"})
    assert _needs_otp(client)  # the default roles include account's manage-account


@pytest.mark.parametrize("config, value, needs", [
    ({"attribute_name": "dept", "attribute_expected_value": "finance"}, "finance", True),
    ({"attribute_name": "dept", "attribute_expected_value": "finance"}, "sales", False),
    ({"attribute_name": "dept", "attribute_expected_value": "fin.*", "regex": "true"}, "finance", True),
    ({"attribute_name": "dept", "attribute_expected_value": "finance", "not": "true"}, "finance", False),
])
def test_conditional_on_user_attribute(client, realm, web_app, bob, config, value, needs):
    add_otp(bob)
    bob.attributes = {"dept": [value]}
    bob.save()
    _conditional_otp_grant(realm, "conditional-user-attribute", config)
    assert _needs_otp(client) is needs


def test_conditional_on_a_group_attribute_when_asked(client, realm, web_app, bob):
    add_otp(bob)
    group = Group.objects.create(realm=realm, name="finance", attributes={"dept": ["finance"]})
    bob.groups.add(group)
    realm = _conditional_otp_grant(realm, "conditional-user-attribute",
                                   {"attribute_name": "dept", "attribute_expected_value": "finance",
                                    "include_group_attributes": "true"})
    assert _needs_otp(client)
    config = AuthenticationExecution.objects.get(realm=realm, authenticator="conditional-user-attribute") \
        .authenticator_config
    config.config = {**config.config, "include_group_attributes": "false"}
    config.save()
    assert not _needs_otp(client)


def test_conditional_on_level_of_authentication_reads_the_stored_level(client, realm, web_app, bob):
    add_otp(bob)
    realm = _conditional_otp_grant(realm, "conditional-level-of-authentication", {"loa-condition-level": "2"})
    assert _needs_otp(client)  # no level reached yet: the first level's sub-flow runs (Keycloak's rule)
    # With a level-1 sub-flow before it, level 2 (OTP) runs only when the client asks for it; the
    # grant asks for none.
    level_one, holder = flow_admin.add_sub_flow(realm, flow_admin.flow_by_alias(realm, "strict grant"), "level one",
                                                priority=25)
    flow_admin.set_requirement(holder, "CONDITIONAL")
    cond = flow_admin.add_execution(realm, level_one, "conditional-level-of-authentication")
    flow_admin.set_requirement(cond, "REQUIRED")
    flow_admin.set_execution_config(realm, cond, "level one config", {"loa-condition-level": "1"})
    round_trip(realm)
    assert not _needs_otp(client)


def test_alternatives_first_configured_one_completes_the_level(client, realm, web_app, bob):
    """An ALTERNATIVE the user has not set up is passed over; the first that succeeds is enough."""
    flow = flow_admin.create_flow(realm, "either")
    username = flow_admin.add_execution(realm, flow, "direct-grant-validate-username")
    flow_admin.set_requirement(username, "REQUIRED")
    sub, holder = flow_admin.add_sub_flow(realm, flow, "otp or password")
    flow_admin.set_requirement(holder, "REQUIRED")
    for provider in ("direct-grant-validate-otp", "direct-grant-validate-password"):
        flow_admin.set_requirement(flow_admin.add_execution(realm, sub, provider), "ALTERNATIVE")
    flow_admin.bind(realm, "direct_grant_flow", flow)
    round_trip(realm)
    assert password_grant(client, "bob", PASSWORD).status_code == 200  # no OTP: the password alternative
    assert password_grant(client, "bob", "wrong").status_code == 400
    add_otp(bob)
    assert password_grant(client, "bob", "wrong", totp=app_totp().now()).status_code == 200


def test_the_organization_sub_flow_is_passed_over_without_organizations(client, realm, web_app, bob):
    assert "Organization" in [e.flow.alias for e in flows.get_flow(realm, "browser").executions if e.flow]
    assert "code" in redirect_query(_sign_in(HttpClient()))
    master_browser = flows.get_flow(Realm.objects.get(name="master"), "browser")
    assert "Organization" not in [e.flow.alias for e in master_browser.executions if e.flow]  # as Keycloak


# --- Changing flows: the rules ------------------------------------------------------------------

def test_built_in_flows_keep_their_executions_but_their_requirements_change(realm):
    browser = flow_admin.flow_by_alias(realm, "browser")
    for change in (lambda: flow_admin.add_execution(realm, browser, "auth-cookie"),
                   lambda: flow_admin.delete_execution(execution(realm, "browser", "auth-cookie")),
                   lambda: flow_admin.delete_flow(realm, browser)):
        with pytest.raises(FlowError):
            change()
    flow_admin.set_requirement(execution(realm, "browser", "auth-spnego"), "ALTERNATIVE")
    assert execution(realm, "browser", "auth-spnego").requirement == "ALTERNATIVE"


def test_a_bound_flow_cannot_be_deleted_and_a_renamed_one_stays_bound(realm):
    mine = flow_admin.copy_flow(realm, flow_admin.flow_by_alias(realm, "browser"), "mine")
    flow_admin.bind(realm, "browser_flow", mine)
    with pytest.raises(FlowError, match="used by browser_flow"):
        flow_admin.delete_flow(realm, mine)
    flow_admin.rename_flow(realm, mine, "ours", "")
    realm.refresh_from_db()
    assert realm.browser_flow == "ours"


def test_copies_and_deletes_are_deep(realm):
    copy_ = flow_admin.copy_flow(realm, flow_admin.flow_by_alias(realm, "first broker login"), "fbl")
    aliases = set(AuthenticationFlow.objects.filter(realm=realm, alias__startswith="fbl")
                  .values_list("alias", flat=True))
    assert "fbl User creation or linking" in aliases and "fbl First broker login - Conditional 2FA" in aliases
    assert execution(realm, "fbl", "idp-review-profile").authenticator_config.alias == "fbl review profile config"
    with pytest.raises(FlowError):
        flow_admin.copy_flow(realm, copy_, "fbl")
    flow_admin.delete_flow(realm, copy_)
    assert not AuthenticationFlow.objects.filter(realm=realm, alias__startswith="fbl").exists()


# --- Required actions ---------------------------------------------------------------------------

def test_new_realm_has_keycloak_26_required_actions(realm):
    actions = {a.alias: (a.enabled, a.default_action) for a in RequiredActionProvider.objects.filter(realm=realm)}
    assert actions["CONFIGURE_TOTP"] == (True, False) and actions["TERMS_AND_CONDITIONS"] == (False, False)
    assert {"UPDATE_PASSWORD", "VERIFY_EMAIL", "webauthn-register", "delete_credential"} <= set(actions)


def test_a_default_action_is_given_to_new_users_but_not_to_imported_ones(realm):
    RequiredActionProvider.objects.filter(realm=realm, alias="UPDATE_PASSWORD").update(default_action=True)
    assert create_user(realm, "carol").required_actions == ["UPDATE_PASSWORD"]
    RequiredActionProvider.objects.filter(realm=realm, alias="UPDATE_PASSWORD").update(enabled=False)
    realm_cache.clear()  # update() sends no signal (creating carol no longer drops the cache)
    assert create_user(realm, "dave").required_actions == []


def test_a_disabled_required_action_is_not_asked_for_and_comes_back_when_enabled(client, realm, web_app, bob):
    bob.required_actions = ["CONFIGURE_TOTP"]
    bob.save()
    assert password_grant(client, "bob", PASSWORD).json()["error_description"] == "Account is not fully set up"
    RequiredActionProvider.objects.filter(realm=realm, alias="CONFIGURE_TOTP").update(enabled=False)
    realm_cache.clear()
    assert password_grant(client, "bob", PASSWORD).status_code == 200  # as Keycloak: the realm switched it off
    bob.refresh_from_db()
    assert bob.required_actions == ["CONFIGURE_TOTP"]  # kept: enabling it again asks for it
    RequiredActionProvider.objects.filter(realm=realm, alias="CONFIGURE_TOTP").update(enabled=True)
    realm_cache.clear()
    assert password_grant(client, "bob", PASSWORD).status_code == 400


def test_an_action_the_realm_does_not_list_is_still_asked_for(client, realm, web_app, bob):
    RequiredActionProvider.objects.filter(realm=realm, alias="UPDATE_PASSWORD").delete()
    bob.required_actions = ["UPDATE_PASSWORD"]
    bob.save()
    assert password_grant(client, "bob", PASSWORD).json()["error_description"] == "Account is not fully set up"


# --- The hot path ---------------------------------------------------------------------------------

def test_password_grant_reads_no_flow_or_required_action_rows_once_cached(client, realm, web_app, bob):
    assert password_grant(client, "bob", PASSWORD).status_code == 200  # warms the realm's configuration
    with CaptureQueriesContext(connection) as queries:
        assert password_grant(client, "bob", PASSWORD).status_code == 200
    tables = " ".join(q["sql"] for q in queries.captured_queries)
    for table in ("realms_authenticationflow", "realms_authenticationexecution", "realms_authenticatorconfig",
                  "realms_requiredactionprovider"):
        assert table not in tables


def test_a_changed_flow_is_seen_at_the_next_sign_in(client, realm, web_app, bob):
    add_otp(bob)
    assert password_grant(client, "bob", PASSWORD).status_code == 400
    flow_admin.set_requirement(execution(realm, "direct grant", "Direct Grant - Conditional OTP"), "DISABLED")
    assert password_grant(client, "bob", PASSWORD).status_code == 200  # no cache clear: the signal dropped it

