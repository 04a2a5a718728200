"""The ``reset-password`` scope of Users (Keycloak 26.4's AdminPermissionsSchema and
UserPermissionsV2.canResetPassword; docs/decisions/0093): it alone lets an admin set a user's
password and label it, nothing more; where no permission with it applies to the user, the user's
``manage`` decides (a group's ``manage-members`` too); Groups have no member variant of it."""
import pytest
from django.test import Client as Browser

from realms.data import realm_cache
from realms.models import Credential, User
from realms.representation import RepresentationError, export_realm, import_realm
from realms.users import storage
from tests.authz.test_admin_permissions_api import fgap  # noqa: F401 (the fixture)
from tests.browser import console_sign_in
from tests.realms.test_admin import submit
from tests.realms.test_admin_rest_api import PASSWORD, Api, token
from tests.realms.test_import_export import load

pytestmark = pytest.mark.django_db
NEW_PASSWORD = "Reset-by-helpdesk-7"
CONSOLE = "/admin/master/console/"


def _user(realm, username):
    return User.objects.get(realm=realm, username=username)


def _permission(api, base, name, scopes, resources, policy, kind="Users"):
    resp = api("post", f"{base}/permission/scope", {
        "name": name, "resourceType": kind, "resources": resources, "scopes": scopes, "policies": [policy]})
    assert resp.status_code == 201, resp.content
    return resp.json()


def _reset(api, user, value=NEW_PASSWORD):
    return api("put", f"fgap/users/{user.pk}/reset-password", {"type": "password", "value": value, "temporary": False})


def test_reset_password_alone_resets_and_labels_the_password_and_nothing_more(fgap):
    realm, base, api, helper = fgap
    target, other = _user(realm, "de-dua-0"), _user(realm, "uk-dua-0")
    storage.set_password(realm, target, "Old-password-1")
    policy = api("post", f"{base}/policy/user", {"name": "The helpdesk", "users": [helper.username]}).json()
    _permission(api, base, "Helpdesk resets DE DUA 0", ["reset-password"], [target.username], policy["id"])
    helpdesk = Api(token("fgap", helper.username))

    assert _reset(helpdesk, target).status_code == 204
    assert token("fgap", target.username, NEW_PASSWORD)  # the new password signs in
    credential = Credential.objects.get(user=target, type=Credential.PASSWORD)
    label = helpdesk.client.put(f"/admin/realms/fgap/users/{target.pk}/credentials/{credential.pk}/userLabel",
                                "Set by the helpdesk", content_type="text/plain")
    assert label.status_code == 204 and Credential.objects.get(pk=credential.pk).user_label == "Set by the helpdesk"

    # Not another user's password, and none of what Keycloak guards with view or manage.
    assert _reset(helpdesk, other).status_code == 403
    refused = [
        helpdesk("get", f"fgap/users/{target.pk}"),
        helpdesk("get", f"fgap/users/{target.pk}/credentials"),
        helpdesk("put", f"fgap/users/{target.pk}", {"firstName": "Changed"}),
        helpdesk("delete", f"fgap/users/{target.pk}/credentials/{credential.pk}"),
        helpdesk("put", f"fgap/users/{target.pk}/execute-actions-email", ["UPDATE_PASSWORD"]),
        helpdesk("put", f"fgap/users/{target.pk}/disable-credential-types", ["password"]),
        helpdesk("post", f"fgap/users/{target.pk}/logout"),
        helpdesk("delete", f"fgap/users/{target.pk}"),
    ]
    assert [r.status_code for r in refused] == [403] * len(refused)
    assert Credential.objects.filter(pk=credential.pk).exists() and _user(realm, "de-dua-0").first_name != "Changed"


def test_manage_resets_until_a_reset_password_permission_applies(fgap):
    realm, base, api, helper = fgap
    target = _user(realm, "de-dua-1")
    policy = api("post", f"{base}/policy/user", {"name": "The helpdesk", "users": [helper.username]}).json()
    _permission(api, base, "Helpdesk manages DE DUA 1", ["manage"], [target.pk], policy["id"])
    helpdesk = Api(token("fgap", helper.username))
    # No permission with reset-password names the user: manage decides (Keycloak's fallback).
    assert _reset(helpdesk, target).status_code == 204
    # One does, and denies the helpdesk: manage no longer resets, and still manages.
    _permission(api, base, "Only super admins reset DE DUA 1", ["reset-password"], [target.pk], "Only super admins")
    assert _reset(helpdesk, target, "Another-reset-8").status_code == 403
    assert helpdesk("put", f"fgap/users/{target.pk}", {"firstName": "Still managed"}).status_code == 204
    assert _user(realm, "de-dua-1").first_name == "Still managed"


def test_a_groups_manage_members_resets_its_members_passwords(fgap):
    """The export's DE DUA admins manage the members of group DE (manage-members): their
    passwords too, by the fallback; Keycloak has no ``reset-password-members``."""
    realm, base, api, _ = fgap
    de_admin = _user(realm, "de-dua-0")
    storage.set_password(realm, de_admin, PASSWORD)
    delegated = Api(token("fgap", de_admin.username))
    member, stranger = _user(realm, "de-user-0"), _user(realm, "uk-user-0")
    assert _reset(delegated, member).status_code == 204
    assert token("fgap", member.username, NEW_PASSWORD)
    assert _reset(delegated, stranger).status_code == 403
    # A reset-password permission on the member that the DE admins do not pass takes it back.
    _permission(api, base, "Only super admins reset DE user 0", ["reset-password"], [member.pk], "Only super admins")
    assert _reset(delegated, member, "Another-reset-8").status_code == 403
    # A member variant is not in Keycloak's schema: refused with its message, never ignored.
    refused = api("post", f"{base}/permission/scope", {
        "name": "Members", "resourceType": "Groups", "scopes": ["reset-password-members"], "policies": []})
    assert refused.status_code == 400
    assert refused.json() == {"errorMessage": "Scope [reset-password-members] does not exist."}
    wrong_type = api("post", f"{base}/permission/scope", {
        "name": "Groups", "resourceType": "Groups", "scopes": ["reset-password"], "policies": []})
    assert wrong_type.json() == {"errorMessage": "Scope reset-password was not found for resource type Groups."}


def test_the_scope_is_imported_exported_and_evaluated(fresh_caches):
    data = load("keycloak-fgap-realm-kc26-full-export.json")
    settings = next(c for c in data["clients"] if c["clientId"] == "admin-permissions")["authorizationSettings"]
    de_user = next(u for u in data["users"] if u["username"] == "de-user-2")
    settings["resources"].append({"name": de_user["id"], "scopes": [{"name": "reset-password"}]})
    settings["policies"].append({"name": "Nobody resets DE user 2", "type": "scope", "logic": "POSITIVE",
                                 "decisionStrategy": "UNANIMOUS", "config": {
                                     "defaultResourceType": "Users", "resources": f'["{de_user["id"]}"]',
                                     "scopes": '["reset-password"]', "applyPolicies": '["Only super admins"]'}})
    realm_cache.clear()
    realm = import_realm(data).realm
    exported = next(c for c in export_realm(realm)["clients"] if c["clientId"] == "admin-permissions")
    kept = next(p for p in exported["authorizationSettings"]["policies"] if p["name"] == "Nobody resets DE user 2")
    assert kept["config"]["scopes"] == '["reset-password"]'
    de_admin = _user(realm, "de-dua-0")
    storage.set_password(realm, de_admin, PASSWORD)
    delegated = Api(token("fgap", de_admin.username))
    assert _reset(delegated, _user(realm, "de-user-2")).status_code == 403
    assert _reset(delegated, _user(realm, "de-user-1")).status_code == 204


@pytest.mark.parametrize("kind, scope", [("Groups", "reset-password-members"), ("Groups", "reset-password")])
def test_an_import_with_a_scope_outside_the_schema_is_refused(fresh_caches, kind, scope):
    data = load("keycloak-fgap-realm-kc26-full-export.json")
    settings = next(c for c in data["clients"] if c["clientId"] == "admin-permissions")["authorizationSettings"]
    settings["policies"].append({"name": "Unknown scope", "type": "scope", "config": {
        "defaultResourceType": kind, "resources": f'["{kind}"]', "scopes": f'["{scope}"]', "applyPolicies": "[]"}})
    realm_cache.clear()
    with pytest.raises(RepresentationError, match=f"scope '{scope}' is not a scope of {kind}"):
        import_realm(data)


def test_the_console_offers_reset_password_where_the_scope_lets(fgap):
    realm, base, api, _ = fgap
    storage.set_password(realm, _user(realm, "de-dua-0"), PASSWORD)
    kept, barred = _user(realm, "de-user-0"), _user(realm, "de-user-1")
    _permission(api, base, "Only super admins reset DE user 1", ["reset-password"], [barred.pk], "Only super admins")
    browser = Browser()
    assert console_sign_in(browser, "de-dua-0", PASSWORD, realm="fgap").status_code == 302
    barred_page = browser.get(f"{CONSOLE}realms/user/{barred.pk}/change/")
    assert barred_page.status_code == 200
    assert f"realms/user/{barred.pk}/password/" not in barred_page.content.decode()
    assert "Reset password" not in barred_page.content.decode() and "No password." in barred_page.content.decode()
    assert browser.get(f"{CONSOLE}realms/user/{barred.pk}/password/").status_code == 403
    kept_page = browser.get(f"{CONSOLE}realms/user/{kept.pk}/change/").content.decode()
    assert f"realms/user/{kept.pk}/password/" in kept_page
    done = submit(browser, f"{CONSOLE}realms/user/{kept.pk}/password/", "user_form",
                  {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD})
    assert "Password set." in done.content.decode()
    assert _user(realm, kept.username).required_actions == ["UPDATE_PASSWORD"]  # temporary, as by default
