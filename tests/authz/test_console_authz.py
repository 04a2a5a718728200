"""The console's Authorization tab of a client (realms.admin.authz) on Keycloak's realm-b quickstart:
the sub-tabs write through the Admin API's functions, so what the console saves is what the API
reads and the UMA grant decides by; Evaluate answers as the API's policy/evaluate; JavaScript
policies are refused with Keycloak's message; only admins with the authorization roles see it."""
import copy
import json
import re

import pytest
from django.test import Client as Browser

from realms.models import Client, Event, Realm, Role, User
from realms.representation import import_realm
from realms.users import storage
from tests.authz.test_uma import uma, user_token
from tests.browser import console_sign_in
from tests.realms.test_admin import make_admin, submit
from tests.realms.test_admin_rest_api import PASSWORD, realm_admin
from tests.realms.test_import_export import load

pytestmark = pytest.mark.django_db
CONSOLE = "/admin/master/console/"


@pytest.fixture
def setup(fresh_caches):
    realm = import_realm(load("quickstarts-kc9-full-export-realm-b.json")).realm
    realm.admin_events_enabled = True
    realm.save()
    client = Client.objects.get(realm=realm, client_id="realm-b-client")
    browser = Browser()
    browser.force_login(make_admin(Realm.objects.get_or_create(name="master")[0]))
    return realm, client, browser


def tab(client, name):
    return f"{CONSOLE}realms/client/{client.pk}/authorization/{name}/"


def text(resp):
    return resp.content.decode()


def test_the_client_page_links_the_tab_only_while_authorization_is_on(setup):
    realm, client, browser = setup
    page = text(browser.get(f"{CONSOLE}realms/client/{client.pk}/change/"))
    assert ' tab-authorization"' in page and tab(client, "evaluate") in page
    account = Client.objects.get(realm=realm, client_id="account")
    assert "tab-authorization" not in text(browser.get(f"{CONSOLE}realms/client/{account.pk}/change/"))
    assert browser.get(tab(account, "settings")).status_code == 404
    assert browser.get(tab(client, "nope")).status_code == 404
    for name in ("settings", "resources", "scopes", "policies", "permissions", "evaluate", "export"):
        resp = browser.get(tab(client, name))
        assert resp.status_code == 200 and 'aria-current="page"' in text(resp)


def test_settings_saved_here_are_what_the_uma_grant_decides_by(setup):
    realm, client, browser = setup
    jdoe = user_token("jdoe")
    resp = browser.post(tab(client, "resources"), {"action": "add-resource", "name": "Loose", "scopes": "loose:read"})
    assert resp.status_code == 302
    assert uma(jdoe, permission="Loose", response_mode="decision").status_code == 403
    resp = browser.post(tab(client, "settings"), {"action": "settings", "policyEnforcementMode": "PERMISSIVE",
                                                  "decisionStrategy": "AFFIRMATIVE"})
    assert resp.status_code == 302
    client.refresh_from_db()
    assert (client.authorization_settings["policyEnforcementMode"], client.authorization_settings["decisionStrategy"],
            client.authorization_settings["allowRemoteResourceManagement"]) == ("PERMISSIVE", "AFFIRMATIVE", False)
    assert uma(jdoe, permission="Loose", response_mode="decision").json() == {"result": True}
    assert Event.objects.filter(realm=realm, kind=Event.ADMIN, resource_type="AUTHORIZATION_RESOURCE_SERVER").exists()
    bad = browser.post(tab(client, "settings"), {"action": "settings", "policyEnforcementMode": "LAX",
                                                 "decisionStrategy": "UNANIMOUS"})
    assert bad.status_code == 400
    client.refresh_from_db()
    assert client.authorization_settings["policyEnforcementMode"] == "PERMISSIVE"


def test_scope_resource_policy_permission_then_evaluate_as_the_api(setup):
    realm, client, browser = setup
    ok = lambda resp: resp.status_code == 302 or pytest.fail(text(resp)[:2000])  # noqa: E731
    ok(browser.post(tab(client, "scopes"), {"action": "add-scope", "name": "doc:edit"}))
    ok(browser.post(tab(client, "resources"), {"action": "add-resource", "name": "Doc", "scopes": "doc:edit",
                                               "uris": "/doc/*"}))
    ok(browser.post(tab(client, "policies"), {"action": "add-policy", "type": "role", "name": "Premium only",
                                              "values": "premium", "logic": "POSITIVE",
                                              "decisionStrategy": "UNANIMOUS"}))
    ok(browser.post(tab(client, "permissions"), {"action": "add-permission", "type": "scope", "name": "Edit docs",
                                                 "resources": "Doc", "scopes": "doc:edit",
                                                 "policies": "Premium only", "decisionStrategy": "UNANIMOUS"}))
    listed = text(browser.get(tab(client, "permissions")))
    assert 'data-name="Edit docs"' in listed and "Scope-based" in listed
    # kolo holds premium, jdoe does not: the UMA grant and Evaluate agree.
    assert uma(user_token("kolo"), permission="Doc#doc:edit", response_mode="decision").json() == {"result": True}
    assert uma(user_token("jdoe"), permission="Doc#doc:edit", response_mode="decision").status_code == 403
    doc = next(r["_id"] for r in Client.objects.get(pk=client.pk).authorization_settings["resources"]
               if r["name"] == "Doc")
    for username, decision in (("kolo", "PERMIT"), ("jdoe", "DENY")):
        result = text(browser.post(tab(client, "evaluate"), {"action": "evaluate", "user": username,
                                                              "resources": doc}))
        row = result.split('data-name="Doc"')[1].split("</tr>")[0]
        assert f'class="decision">{decision}<' in row and "Edit docs: " + decision in row
        assert f"Premium only {decision}" in row
    # "What if" jdoe held premium (roles counted as held).
    premium = Role.objects.get(realm=realm, client=None, name="premium")
    what_if = text(browser.post(tab(client, "evaluate"), {"action": "evaluate", "user": "jdoe", "resources": doc,
                                                          "roles": premium.pk}))
    assert 'class="decision">PERMIT<' in what_if.split('data-name="Doc"')[1]
    assert browser.post(tab(client, "evaluate"), {"action": "evaluate", "user": "nobody"}).status_code == 400
    # Deleting the permission: nothing covers the scope any more, ENFORCING denies it.
    permission = next(p for p in Client.objects.get(pk=client.pk).authorization_settings["policies"]
                      if p["name"] == "Edit docs")
    ok(browser.post(tab(client, "permissions"), {"action": "delete-policy", "id": permission["id"]}))
    assert uma(user_token("kolo"), permission="Doc#doc:edit", response_mode="decision").status_code == 403


def test_refusals_in_keycloaks_words(setup):
    realm, client, browser = setup
    js = browser.post(tab(client, "policies"), {"action": "add-policy", "type": "js", "name": "Script",
                                                "logic": "POSITIVE", "decisionStrategy": "UNANIMOUS"})
    assert js.status_code == 400 and 'id="authz-error">Script upload is disabled<' in text(js)
    taken = browser.post(tab(client, "policies"), {"action": "add-policy", "type": "role", "name": "Default Policy",
                                                   "values": "user", "logic": "POSITIVE",
                                                   "decisionStrategy": "UNANIMOUS"})
    assert taken.status_code == 400 and "Policy with name [Default Policy] already exists" in text(taken)
    unknown = browser.post(tab(client, "policies"), {"action": "add-policy", "type": "role", "name": "Ghost",
                                                     "values": "no-such-role", "logic": "POSITIVE",
                                                     "decisionStrategy": "UNANIMOUS"})
    assert unknown.status_code == 400 and "unknown role" in text(unknown)
    names = [p["name"] for p in Client.objects.get(pk=client.pk).authorization_settings["policies"]]
    assert "Script" not in names and "Ghost" not in names and names.count("Default Policy") == 1


def test_export_is_the_admin_apis_settings(setup):
    realm, client, browser = setup
    api = realm_admin(realm, "authz-admin", "view-authorization", "view-clients")
    from_api = api("get", f"realm-b/clients/{client.pk}/authz/resource-server/settings").json()
    download = browser.get(tab(client, "export") + "?download=1")
    assert download["Content-Type"] == "application/json" and json.loads(download.content) == from_api
    shown = re.search(r'<pre class="authz-export" id="authz-export">(.*?)</pre>', text(browser.get(tab(client, "export"))),
                      re.S).group(1)
    assert json.loads(shown.replace("&quot;", '"').replace("&#x27;", "'").replace("&amp;", "&")) == from_api


def test_only_admins_with_the_authorization_roles(setup):
    realm, client, _ = setup
    for name, roles in (("viewer", ("view-clients", "view-authorization")), ("clients-only", ("manage-clients",)),
                        ("manager", ("manage-clients", "manage-authorization"))):
        user = User.objects.create(realm=realm, username=name)
        storage.set_password(realm, user, PASSWORD)
        user.roles.add(*Role.objects.filter(realm=realm, client__client_id="realm-management", name__in=roles))

    def signed_in(username):
        browser = Browser()
        assert console_sign_in(browser, username, PASSWORD, realm="realm-b").status_code == 302
        return browser
    viewer = signed_in("viewer")
    page = viewer.get(tab(client, "policies"))
    assert page.status_code == 200 and "Create policy" not in text(page) and 'value="delete-policy"' not in text(page)
    assert viewer.post(tab(client, "scopes"), {"action": "add-scope", "name": "sneaky"}).status_code == 403
    assert signed_in("clients-only").get(tab(client, "settings")).status_code == 403
    manager = signed_in("manager")
    assert manager.post(tab(client, "scopes"), {"action": "add-scope", "name": "fine"}).status_code == 302
    names = [s["name"] for s in Client.objects.get(pk=client.pk).authorization_settings["scopes"]]
    assert "fine" in names and "sneaky" not in names


def test_the_authorization_switch_makes_a_resource_server(setup):
    realm, _, browser = setup
    app = Client.objects.create(realm=realm, client_id="docs-app", redirect_uris=["https://docs.example/cb"])
    assert browser.get(tab(app, "settings")).status_code == 404
    submit(browser, f"{CONSOLE}realms/client/{app.pk}/change/", "client_form", {"authorization_services_enabled": "on"})
    app.refresh_from_db()
    assert app.authorization_services_enabled and app.authorization_settings["policyEnforcementMode"] == "ENFORCING"
    assert browser.get(tab(app, "settings")).status_code == 200


def test_edit_in_place_a_scope_a_policy_and_a_resource(setup):
    realm, client, browser = setup
    settings = lambda: Client.objects.get(pk=client.pk).authorization_settings  # noqa: E731
    assert browser.post(tab(client, "scopes"), {"action": "add-scope", "name": "doc:edit"}).status_code == 302
    assert browser.post(tab(client, "resources"), {"action": "add-resource", "name": "Doc", "scopes": "doc:edit"}
                        ).status_code == 302
    assert browser.post(tab(client, "permissions"), {"action": "add-permission", "type": "scope", "name": "Edit docs",
                                                     "resources": "Doc", "scopes": "doc:edit",
                                                     "policies": "Premium Policy", "decisionStrategy": "UNANIMOUS"}
                        ).status_code == 302
    assert uma(user_token("jdoe"), permission="Doc#doc:edit", response_mode="decision").status_code == 403
    # The policy's form, filled from the policy; saved with another role, jdoe (role user) is granted.
    policy = next(p for p in settings()["policies"] if p["name"] == "Premium Policy")
    page = text(browser.get(tab(client, "policies") + f"?edit={policy['id']}"))
    assert "Edit policy" in page and f'name="id" value="{policy["id"]}"' in page and "\npremium</textarea>" in page
    saved = browser.post(tab(client, "policies"), {"action": "add-policy", "id": policy["id"], "type": "js",
                                                   "name": "Premium Policy", "values": "user", "logic": "POSITIVE",
                                                   "decisionStrategy": "UNANIMOUS"})
    assert saved.status_code == 302
    edited = next(p for p in settings()["policies"] if p["id"] == policy["id"])
    assert edited["type"] == "role" and json.loads(edited["config"]["roles"])[0]["id"] == "user"
    assert uma(user_token("jdoe"), permission="Doc#doc:edit", response_mode="decision").json() == {"result": True}
    # A scope renamed: the resource and the permission follow.
    scope = next(s for s in settings()["scopes"] if s["name"] == "doc:edit")
    assert browser.post(tab(client, "scopes"), {"action": "add-scope", "id": scope["id"], "name": "doc:write"}
                        ).status_code == 302
    doc = next(r for r in settings()["resources"] if r["name"] == "Doc")
    assert doc["scopes"] == [{"name": "doc:write"}]
    permission = next(p for p in settings()["policies"] if p["name"] == "Edit docs")
    assert json.loads(permission["config"]["scopes"]) == ["doc:write"]
    # The resource's URIs changed, its id kept.
    assert browser.post(tab(client, "resources"), {"action": "add-resource", "id": doc["_id"], "name": "Doc",
                                                   "scopes": "doc:write", "uris": "/docs/*"}).status_code == 302
    assert next(r for r in settings()["resources"] if r["_id"] == doc["_id"])["uris"] == ["/docs/*"]
    assert browser.get(tab(client, "scopes") + "?edit=nope").status_code == 404


def test_editing_a_role_policy_keeps_a_required_role(setup):
    realm, client, browser = setup
    settings = lambda: Client.objects.get(pk=client.pk).authorization_settings  # noqa: E731
    assert browser.post(tab(client, "policies"), {"action": "add-policy", "type": "role", "name": "Both",
                                                  "values": "user", "logic": "POSITIVE",
                                                  "decisionStrategy": "UNANIMOUS"}).status_code == 302
    policy = next(p for p in settings()["policies"] if p["name"] == "Both")
    stored = copy.deepcopy(settings())
    next(p for p in stored["policies"] if p["id"] == policy["id"])["config"]["roles"] = json.dumps(
        [{"id": "user", "required": True}])
    Client.objects.filter(pk=client.pk).update(authorization_settings=stored)
    assert browser.post(tab(client, "policies"), {"action": "add-policy", "id": policy["id"], "type": "role",
                                                  "name": "Both", "values": "user\npremium", "logic": "POSITIVE",
                                                  "decisionStrategy": "UNANIMOUS"}).status_code == 302
    edited = next(p for p in settings()["policies"] if p["id"] == policy["id"])
    assert json.loads(edited["config"]["roles"]) == [{"id": "user", "required": True},
                                                     {"id": "premium", "required": False}]
