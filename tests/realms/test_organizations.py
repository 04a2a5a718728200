"""Organizations (Keycloak 26) on the Admin REST API: the realm switch, CRUD and search, members,
Keycloak's messages and statuses, admin events; the account API's list; the realm export's
``organizations`` round trip."""
import pytest

from realms.models import Client, Event, Organization, OrganizationMember, User
from realms.representation import export_realm, import_realm
from realms.users.accounts import create_user

from . import test_account_api as account_api
from .test_admin_rest_api import acme, created_id, master_api, realm_admin  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db

ACME = {"name": "ACME Corp", "alias": "acme-corp", "description": "Widgets", "redirectUrl": "https://acme.example/",
        "domains": [{"name": "acme.example", "verified": True}], "attributes": {"tier": ["gold"]}}


@pytest.fixture
def orgs_on(acme):
    acme.organizations_enabled = True
    acme.save()
    return acme


def test_refused_while_the_realm_has_organizations_off(master_api, acme):
    for path in ("acme/organizations", "acme/organizations/count", "acme/organizations/x/members"):
        resp = master_api("get", path)
        assert (resp.status_code, resp.json()) == (404, {"errorMessage": "Organizations not enabled for this realm."})
    # The role is checked first, as in Keycloak.
    viewer = realm_admin(acme, "viewer", "view-realm")
    assert viewer("get", "acme/organizations").json() == {"error": "HTTP 403 Forbidden"}


def test_crud_and_search_as_keycloak(master_api, orgs_on):
    org_id = created_id(master_api("post", "acme/organizations", ACME))
    full = master_api("get", f"acme/organizations/{org_id}").json()
    assert full == {"id": org_id, "name": "ACME Corp", "alias": "acme-corp", "enabled": True, "description": "Widgets",
                    "redirectUrl": "https://acme.example/", "domains": [{"name": "acme.example", "verified": True}],
                    "attributes": {"tier": ["gold"]}}
    created_id(master_api("post", "acme/organizations", {"name": "Beta", "domains": [{"name": "beta.example"}]}))
    listed = master_api("get", "acme/organizations").json()
    assert [o["alias"] for o in listed] == ["acme-corp", "Beta"] and "attributes" not in listed[0]
    assert "attributes" in master_api("get", "acme/organizations", briefRepresentation="false").json()[0]
    assert [o["name"] for o in master_api("get", "acme/organizations", search="beta.ex").json()] == ["Beta"]
    assert master_api("get", "acme/organizations", search="beta", exact="true").json()[0]["name"] == "Beta"
    assert master_api("get", "acme/organizations", search="bet", exact="true").json() == []
    assert [o["name"] for o in master_api("get", "acme/organizations", q="tier:gold").json()] == ["ACME Corp"]
    assert master_api("get", "acme/organizations", first="1", max="1").json()[0]["name"] == "Beta"
    assert master_api("get", "acme/organizations/count").json() == 2
    assert master_api("get", "acme/organizations/count", search="acme").json() == 1

    def refused(method, path, body, status, message):
        resp = master_api(method, path, body)
        assert (resp.status_code, resp.json()) == (status, {"errorMessage": message})

    refused("post", "acme/organizations", {"name": "ACME Corp", "alias": "x"}, 409,
            "A organization with the same name already exists.")
    refused("post", "acme/organizations", {"name": "Other", "alias": "acme-corp"}, 409,
            "A organization with the same alias already exists")
    refused("post", "acme/organizations", {"name": "Other", "domains": [{"name": "acme.example"}]}, 400,
            "Domain acme.example is already linked to another organization in realm acme")
    refused("post", "acme/organizations", {"name": "Other", "domains": [{"name": "not a domain"}]}, 400,
            "The specified domain is invalid: not a domain")
    refused("post", "acme/organizations", {"alias": "x"}, 400, "Name can not be null")
    refused("put", f"acme/organizations/{org_id}", {**ACME, "alias": "renamed"}, 400, "Cannot change the alias")
    refused("put", f"acme/organizations/{org_id}", {**ACME, "name": "Beta"}, 409,
            "A organization with the same name already exists.")

    assert master_api("put", f"acme/organizations/{org_id}", {**ACME, "enabled": False,
                                                              "domains": [{"name": "acme.test"}]}).status_code == 204
    org = Organization.objects.get(pk=org_id)
    assert (org.enabled, [d.name for d in org.domains.all()], org.alias) == (False, ["acme.test"], "acme-corp")
    assert master_api("delete", f"acme/organizations/{org_id}").status_code == 204
    missing = master_api("get", f"acme/organizations/{org_id}")
    assert (missing.status_code, missing.json()) == (404, {"errorMessage": "Organization not found."})
    events = list(Event.objects.filter(realm=orgs_on, resource_type="ORGANIZATION")
                  .order_by("time").values_list("type", "resource_path"))
    assert events[0] == ("CREATE", f"organizations/{org_id}") and ("UPDATE", f"organizations/{org_id}") in events
    assert events[-1] == ("DELETE", f"organizations/{org_id}")


def test_members(master_api, orgs_on):
    org_id = created_id(master_api("post", "acme/organizations", ACME))
    alice = create_user(orgs_on, "alice", email="alice@acme.example", first_name="Alice")
    bob = create_user(orgs_on, "bob", email="bob@acme.example")
    for user in (alice, bob):
        resp = master_api("post", f"acme/organizations/{org_id}/members", user.pk)
        assert created_id(resp) == user.pk
    again = master_api("post", f"acme/organizations/{org_id}/members", alice.pk)
    assert (again.status_code, again.json()) == (409, {"errorMessage": "User is already a member of the organization."})
    nobody = master_api("post", f"acme/organizations/{org_id}/members", "no-such-user")
    assert (nobody.status_code, nobody.json()) == (400, {"errorMessage": "User does not exist"})

    members = master_api("get", f"acme/organizations/{org_id}/members").json()
    assert [(m["username"], m["membershipType"]) for m in members] == [("alice", "UNMANAGED"), ("bob", "UNMANAGED")]
    assert [m["username"] for m in master_api("get", f"acme/organizations/{org_id}/members", search="ali").json()] \
        == ["alice"]
    assert master_api("get", f"acme/organizations/{org_id}/members/count").json() == 2
    assert master_api("get", f"acme/organizations/{org_id}/members/{alice.pk}").json()["firstName"] == "Alice"
    orgs = master_api("get", f"acme/organizations/members/{alice.pk}/organizations").json()
    assert [o["alias"] for o in orgs] == ["acme-corp"]
    assert master_api("get", f"acme/organizations/{org_id}/members/{alice.pk}/organizations").json() == orgs

    assert master_api("delete", f"acme/organizations/{org_id}/members/{alice.pk}").status_code == 204
    assert master_api("get", f"acme/organizations/{org_id}/members/{alice.pk}").status_code == 404
    assert User.objects.filter(pk=alice.pk).exists()  # an unmanaged member stays a user
    # A managed member (provisioned by the organization) goes with its membership.
    OrganizationMember.objects.filter(user=bob).update(membership_type=OrganizationMember.MANAGED)
    assert master_api("delete", f"acme/organizations/{org_id}/members/{bob.pk}").status_code == 204
    assert not User.objects.filter(pk=bob.pk).exists()
    kinds = list(Event.objects.filter(realm=orgs_on, resource_type="ORGANIZATION_MEMBERSHIP")
                 .order_by("time").values_list("type", flat=True))
    assert kinds == ["CREATE", "CREATE", "DELETE", "DELETE"]


def test_manage_realm_is_needed(orgs_on):
    assert realm_admin(orgs_on, "viewer", "view-realm", "view-users")("get", "acme/organizations").status_code == 403
    manager = realm_admin(orgs_on, "manager", "manage-realm")
    assert manager("get", "acme/organizations").status_code == 200


def test_account_api_lists_the_users_organizations(orgs_on, master_api):
    org_id = created_id(master_api("post", "acme/organizations", ACME))
    Client.objects.filter(realm=orgs_on, client_id="account-console").update(direct_access_grants_enabled=True)
    carol = create_user(orgs_on, "carol", password=account_api.PASSWORD, email="carol@acme.example")
    OrganizationMember.objects.create(organization_id=org_id, user=carol)
    access = account_api.token("acme", "carol")["access_token"]
    assert account_api.call(access, "get", "organizations").json() == [
        {"id": org_id, "name": "ACME Corp", "alias": "acme-corp", "enabled": True, "description": "Widgets",
         "redirectUrl": "https://acme.example/", "domains": [{"name": "acme.example", "verified": True}]}]
    orgs_on.organizations_enabled = False
    orgs_on.save()
    assert account_api.call(access, "get", "organizations").json() == []


def test_realm_export_round_trip(master_api, orgs_on):
    org_id = created_id(master_api("post", "acme/organizations", ACME))
    dave = create_user(orgs_on, "dave", email="dave@acme.example")
    OrganizationMember.objects.create(organization_id=org_id, user=dave, membership_type=OrganizationMember.MANAGED)
    exported = export_realm(orgs_on)
    assert exported["organizations"] == [{**master_api("get", f"acme/organizations/{org_id}").json(),
                                          "members": [{"username": "dave", "membershipType": "MANAGED"}]}]
    exported["realm"] = exported["id"] = "acme2"
    exported.pop("id")
    realm2 = import_realm(exported).realm
    again = export_realm(realm2)["organizations"]
    assert [{k: v for k, v in o.items() if k != "id"} for o in again] == \
        [{k: v for k, v in o.items() if k != "id"} for o in exported["organizations"]]
    assert realm2.organizations_enabled


def test_account_console_page_lists_them(realm, web_app, bob, fresh_caches):
    from .test_account_console import CONSOLE, _signed_in

    http = _signed_in()
    org = Organization.objects.create(realm=realm, name="ACME Corp", alias="acme-corp")
    org.domains.create(realm=realm, name="acme.example")
    OrganizationMember.objects.create(organization=org, user=bob)
    page = http.get(CONSOLE + "organizations").content.decode()
    assert "You are not a member of any organization." in page
    assert f'href="{CONSOLE}organizations"' not in page  # no section in the navigation while the switch is off
    realm.organizations_enabled = True
    realm.save()
    page = http.get(CONSOLE + "organizations").content.decode()
    assert "<strong>ACME Corp</strong>" in page and "acme.example" in page
    assert f'href="{CONSOLE}organizations"' in page


def test_openapi_describes_the_routes_and_the_form_bodies():
    from django.test import Client as HttpClient

    paths = HttpClient().get("/admin/openapi.json").json()["paths"]
    orgs = "/admin/realms/{realm}/organizations"
    assert paths[orgs]["post"]["x-required-role"] == "manage-realm"
    assert "application/json" in paths[orgs]["post"]["requestBody"]["content"]
    invite = paths[f"{orgs}/{{org_id}}/members/invite-user"]["post"]
    assert list(invite["requestBody"]["content"]) == ["application/x-www-form-urlencoded"]
    assert f"{orgs}/members/{{member_id}}/organizations" in paths
