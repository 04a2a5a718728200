"""The Admin REST API's ``/admin/realms/{realm}/authentication/`` resources (Keycloak's
AuthenticationManagementResource): paths, JSON, status codes, view-realm to read and
manage-realm to change, an admin event for each change."""
import pytest

from realms.models import AuthenticationFlow, Event, RequiredActionProvider
from tests.realms.test_admin_rest_api import acme, created_id, realm_admin  # noqa: F401  (fixtures)

pytestmark = pytest.mark.django_db

A = "acme/authentication"


@pytest.fixture
def api(acme):  # noqa: F811
    return realm_admin(acme, "flow-admin", "manage-realm", "view-realm")


@pytest.fixture
def viewer(acme):  # noqa: F811
    return realm_admin(acme, "flow-viewer", "view-realm")


def test_flows_list_the_top_level_flows_as_keycloak(api):
    resp = api("get", f"{A}/flows")
    assert resp.status_code == 200
    aliases = [f["alias"] for f in resp.json()]
    assert aliases == ["browser", "clients", "direct grant", "docker auth", "first broker login", "registration",
                       "reset credentials"]  # saml ecp is left out, as Keycloak does
    browser = resp.json()[0]
    assert browser["builtIn"] is True and browser["topLevel"] is True and browser["providerId"] == "basic-flow"
    assert browser["authenticationExecutions"][0] == {
        "authenticator": "auth-cookie", "authenticatorFlow": False, "requirement": "ALTERNATIVE", "priority": 10,
        "autheticatorFlow": False, "userSetupAllowed": False}
    one = api("get", f"{A}/flows/{browser['id']}")
    assert one.status_code == 200 and one.json() == browser
    assert api("get", f"{A}/flows/nope").json() == {"error": "Could not find flow with id"}


def test_copy_edit_and_delete_a_flow(api, acme):  # noqa: F811
    resp = api("post", f"{A}/flows/browser/copy", {"newName": "my browser"})
    flow_id = created_id(resp)
    assert resp["Location"].endswith(f"/admin/realms/acme/authentication/flows/browser/copy/{flow_id}")
    assert api("post", f"{A}/flows/browser/copy", {"newName": "my browser"}).status_code == 409
    assert api("post", f"{A}/flows/nope/copy", {"newName": "x"}).status_code == 404

    rows = api("get", f"{A}/flows/my browser/executions").json()
    assert [(r["displayName"], r["level"], r["index"]) for r in rows][:6] == [
        ("Cookie", 0, 0), ("Kerberos", 0, 1), ("Identity Provider Redirector", 0, 2),
        ("my browser Organization", 0, 3), ("my browser Browser - Conditional Organization", 1, 0),
        ("Condition - user configured", 2, 0)]
    forms = next(r for r in rows if r["displayName"] == "my browser forms")
    assert forms["authenticationFlow"] is True and forms["requirementChoices"] == [
        "REQUIRED", "ALTERNATIVE", "DISABLED", "CONDITIONAL"]
    cookie = rows[0]
    assert cookie["providerId"] == "auth-cookie" and cookie["requirementChoices"] == ["REQUIRED", "ALTERNATIVE",
                                                                                       "DISABLED"]

    # Requirement by PUT .../executions, one execution by id.
    assert api("put", f"{A}/flows/my browser/executions", {**cookie, "requirement": "DISABLED"}).status_code == 204
    assert api("get", f"{A}/executions/{cookie['id']}").json()["requirement"] == "DISABLED"
    assert api("put", f"{A}/flows/my browser/executions",
               {**cookie, "requirement": "SOMETIMES"}).json() == {"error": "Invalid requirement SOMETIMES"}

    # Add a step and a sub-flow, move, configure and delete.
    added = created_id(api("post", f"{A}/flows/my browser/executions/execution", {"provider": "auth-otp-form"}))
    assert api("get", f"{A}/executions/{added}").json()["requirement"] == "DISABLED"
    assert api("post", f"{A}/flows/my browser/executions/execution",
               {"provider": "no-such"}).json() == {"error": "No authentication provider found for id: no-such"}
    sub_id = created_id(api("post", f"{A}/flows/my browser/executions/flow",
                            {"alias": "step up", "type": "basic-flow", "description": "level 2"}))
    assert AuthenticationFlow.objects.get(pk=sub_id).alias == "step up"
    condition = created_id(api("post", f"{A}/flows/step up/executions/execution",
                               {"provider": "conditional-user-role"}))
    config = api("post", f"{A}/executions/{condition}/config", {"alias": "auditors", "config": {"condUserRole": "x"}})
    config_id = created_id(config)
    assert api("get", f"{A}/config/{config_id}").json() == {"id": config_id, "alias": "auditors",
                                                            "config": {"condUserRole": "x"}}
    changed = api("put", f"{A}/config/{config_id}", {"alias": "auditors", "config": {"condUserRole": "y"}})
    assert changed.status_code == 204
    step_rows = api("get", f"{A}/flows/step up/executions").json()
    assert step_rows[0]["configurable"] is True and step_rows[0]["alias"] == "auditors"
    assert step_rows[0]["authenticationConfig"] == config_id

    before = [r["id"] for r in api("get", f"{A}/flows/my browser/executions").json() if r["level"] == 0]
    assert api("post", f"{A}/executions/{added}/raise-priority").status_code == 204
    after = [r["id"] for r in api("get", f"{A}/flows/my browser/executions").json() if r["level"] == 0]
    assert after.index(added) == before.index(added) - 1
    assert api("post", f"{A}/executions/{added}/lower-priority").status_code == 204
    assert api("delete", f"{A}/executions/{added}").status_code == 204
    assert api("get", f"{A}/executions/{added}").json() == {"error": "Illegal execution"}

    # Built-in flows keep their executions.
    builtin_cookie = api("get", f"{A}/flows/browser/executions").json()[0]
    assert api("delete", f"{A}/executions/{builtin_cookie['id']}").json() == {
        "error": "It is illegal to remove execution from a built in flow"}
    browser_id = next(f["id"] for f in api("get", f"{A}/flows").json() if f["alias"] == "browser")
    assert api("delete", f"{A}/flows/{browser_id}").json() == {"error": "Can't delete built in flow"}

    assert api("put", f"{A}/flows/{flow_id}", {"alias": "our browser", "description": "d"}).status_code == 204
    assert api("delete", f"{A}/flows/{flow_id}").status_code == 204
    assert not AuthenticationFlow.objects.filter(realm=acme, alias__startswith="my browser").exists()
    kinds = list(Event.objects.filter(realm=acme, kind=Event.ADMIN).values_list("resource_type", flat=True))
    assert {"AUTH_FLOW", "AUTH_EXECUTION", "AUTH_EXECUTION_FLOW", "AUTHENTICATOR_CONFIG"} <= set(kinds)


def test_create_flow_and_conflicts(api):
    created_id(api("post", f"{A}/flows", {"alias": "mine", "providerId": "basic-flow", "topLevel": True}))
    assert api("post", f"{A}/flows", {"alias": "mine"}).json() == {"errorMessage": "Flow mine already exists"}
    assert api("post", f"{A}/flows", {"alias": ""}).status_code == 409


def test_required_actions(api, acme):  # noqa: F811
    actions = api("get", f"{A}/required-actions").json()
    assert actions[0] == {"alias": "CONFIGURE_TOTP", "name": "Configure OTP", "providerId": "CONFIGURE_TOTP",
                          "enabled": True, "defaultAction": False, "priority": 10, "config": {}}
    totp = api("get", f"{A}/required-actions/CONFIGURE_TOTP").json()
    assert api("put", f"{A}/required-actions/CONFIGURE_TOTP", {**totp, "defaultAction": True}).status_code == 204
    assert RequiredActionProvider.objects.get(realm=acme, alias="CONFIGURE_TOTP").default_action is True
    assert api("post", f"{A}/required-actions/CONFIGURE_TOTP/lower-priority").status_code == 204
    assert [a["alias"] for a in api("get", f"{A}/required-actions").json()][:2] == ["TERMS_AND_CONDITIONS",
                                                                                    "CONFIGURE_TOTP"]
    assert api("delete", f"{A}/required-actions/CONFIGURE_TOTP").status_code == 204
    unregistered = api("get", f"{A}/unregistered-required-actions").json()
    assert "CONFIGURE_TOTP" in [u["providerId"] for u in unregistered]
    assert api("post", f"{A}/register-required-action",
               {"providerId": "CONFIGURE_TOTP", "name": "Configure OTP"}).status_code == 204
    assert RequiredActionProvider.objects.get(realm=acme, alias="CONFIGURE_TOTP").enabled is True
    assert api("post", f"{A}/register-required-action", {"providerId": "nope"}).json() == {
        "error": "Required Action Provider with given providerId not found"}
    assert api("get", f"{A}/required-actions/nope").json() == {"error": "Failed to find required action"}


def test_providers_and_config_descriptions(api):
    providers = {p["id"]: p for p in api("get", f"{A}/authenticator-providers").json()}
    assert {"auth-cookie", "auth-username-password-form", "conditional-user-role", "conditional-user-attribute",
            "conditional-level-of-authentication"} <= set(providers)
    assert providers["conditional-user-role"]["displayName"] == "Condition - user role"
    described = api("get", f"{A}/config-description/conditional-user-attribute").json()
    assert described["providerId"] == "conditional-user-attribute"
    assert [p["name"] for p in described["properties"]] == [
        "attribute_name", "attribute_expected_value", "include_group_attributes", "regex", "not"]
    assert api("get", f"{A}/config-description/nope").status_code == 404
    assert api("get", f"{A}/form-action-providers").status_code == 200


def test_reading_needs_view_realm_and_changing_manage_realm(viewer, acme):  # noqa: F811
    assert viewer("get", f"{A}/flows").status_code == 200
    assert viewer("get", f"{A}/flows/browser/executions").status_code == 200
    assert viewer("get", f"{A}/required-actions").status_code == 200
    for method, path, body in (
            ("post", f"{A}/flows/browser/copy", {"newName": "x"}),
            ("post", f"{A}/flows", {"alias": "x"}),
            ("put", f"{A}/flows/browser/executions", {"id": "x", "requirement": "DISABLED"}),
            ("post", f"{A}/flows/browser/executions/execution", {"provider": "auth-cookie"}),
            ("delete", f"{A}/executions/x", None),
            ("put", f"{A}/required-actions/CONFIGURE_TOTP", {"enabled": False}),
            ("post", f"{A}/register-required-action", {"providerId": "CONFIGURE_TOTP"})):
        resp = viewer(method, path, body)
        assert resp.status_code == 403 and resp.json() == {"error": "HTTP 403 Forbidden"}, path
    nobody = realm_admin(acme, "nobody")
    assert nobody("get", f"{A}/flows").status_code == 403
    assert not AuthenticationFlow.objects.filter(realm=acme, alias="x").exists()
