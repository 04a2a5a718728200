"""SCIM 2.0 provisioning below /realms/<realm>/scim/v2 (RFC 7643, RFC 7644; docs/decisions/0034):
the realm switch, who may call, Users and Groups with filters, sorting, paging, PUT, PATCH and
ETags, every change an admin event, and a user deactivated by SCIM signed out of everything."""
import json
from urllib.parse import urlencode

import pytest
from django.test import Client

from realms.data import realm_cache
from realms.models import Client as ClientModel
from realms.models import Event, Group, ProtocolMapper, Role, User
from realms.representation import export_realm
from realms.representation.services import add_default_client_scopes, create_realm
from realms.users.accounts import create_user, enable_service_account
from tests.passwords import holds_password

pytestmark = pytest.mark.django_db

BASE = "http://testserver/realms/hr/scim/v2"
SCIM = "application/scim+json"
USER = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP = "urn:ietf:params:scim:schemas:core:2.0:Group"
PATCH = "urn:ietf:params:scim:api:messages:2.0:PatchOp"


@pytest.fixture
def hr():
    realm_cache.clear()
    realm = create_realm("hr", scim_api_enabled=True, admin_events_enabled=True, admin_events_details_enabled=True)
    return realm


def service_client(realm, client_id, *roles, audience=BASE, public=False):
    client = ClientModel.objects.create(realm=realm, client_id=client_id, public_client=public,
                                        service_accounts_enabled=not public, direct_access_grants_enabled=True)
    client.set_secret("s3cret-" + client_id)
    client.save()
    add_default_client_scopes(client)
    if audience:
        ProtocolMapper.objects.create(client=client, name="scim audience", protocol_mapper="oidc-audience-mapper",
                                      config={"included.custom.audience": audience, "access.token.claim": "true"})
    if not public:
        account = enable_service_account(client)
        account.roles.add(*Role.objects.filter(realm=realm, client__client_id="realm-management", name__in=roles))
    return client


def token_for(realm, client_id):
    answer = Client().post(f"/realms/{realm.name}/protocol/openid-connect/token", {
        "grant_type": "client_credentials", "client_id": client_id, "client_secret": "s3cret-" + client_id})
    assert answer.status_code == 200, answer.content
    return answer.json()["access_token"]


class Scim:
    def __init__(self, token):
        self.http = Client(HTTP_AUTHORIZATION=f"Bearer {token}")

    def __call__(self, method, path, body=None, **headers):
        url = f"/realms/hr/scim/v2/{path}"
        if method == "get":
            return self.http.get(url, **headers)
        return getattr(self.http, method)(url, json.dumps(body) if body is not None else "", content_type=SCIM,
                                          **headers)


@pytest.fixture
def scim(hr):
    service_client(hr, "provisioner", "manage-users", "view-users")
    return Scim(token_for(hr, "provisioner"))


def new_user(scim, username, **extra):
    answer = scim("post", "Users", {"schemas": [USER], "userName": username, **extra})
    assert answer.status_code == 201, answer.content
    return answer.json()


def test_off_by_default_and_only_for_confidential_clients_with_the_audience(hr):
    hr.scim_api_enabled = False
    hr.save()
    realm_cache.clear()
    off = Client().get("/realms/hr/scim/v2/Users")
    assert off.status_code == 404 and off.json()["schemas"] == ["urn:ietf:params:scim:api:messages:2.0:Error"]
    hr.scim_api_enabled = True
    hr.save()

    missing = Client().get("/realms/hr/scim/v2/Users")
    assert missing.status_code == 401 and missing["WWW-Authenticate"].startswith("Bearer")
    assert missing.json()["status"] == "401"
    service_client(hr, "no-audience", "manage-users", "view-users", audience=None)
    assert Scim(token_for(hr, "no-audience"))("get", "Users").status_code == 401
    service_client(hr, "reader", "view-users")
    reader = Scim(token_for(hr, "reader"))
    assert reader("get", "Users").status_code == 200
    refused = reader("post", "Users", {"schemas": [USER], "userName": "x"})
    assert refused.status_code == 403 and not User.objects.filter(realm=hr, username="x").exists()
    # A public client's token (password grant) is refused, as Keycloak refuses it.
    spa = service_client(hr, "spa", audience=BASE, public=True)
    person = create_user(hr, "person", password="person-pass-1")
    person.roles.add(*Role.objects.filter(realm=hr, client__client_id="realm-management", name="view-users"))
    grant = Client().post("/realms/hr/protocol/openid-connect/token", {
        "grant_type": "password", "client_id": spa.client_id, "username": "person", "password": "person-pass-1"})
    assert grant.status_code == 200, grant.content
    public = Scim(grant.json()["access_token"])("get", "Users")
    assert public.status_code == 403 and public.json()["detail"] == "Public client not allowed"
    # Another realm's token with the right audience is not this realm's.
    other = create_realm("other")
    service_client(other, "provisioner", "manage-users", "view-users")
    assert Scim(token_for(other, "provisioner"))("get", "Users").status_code == 401


def test_discovery_documents(scim, hr):
    config = scim("get", "ServiceProviderConfig")
    assert config["Content-Type"] == SCIM
    body = config.json()
    assert (body["patch"], body["bulk"]["supported"], body["etag"], body["filter"]["maxResults"]) == (
        {"supported": True}, False, {"supported": True}, 1000)
    types = scim("get", "ResourceTypes").json()
    assert {t["name"]: t["endpoint"] for t in types["Resources"]} == {"User": "/Users", "Group": "/Groups"}
    user_schema = scim("get", f"Schemas/{USER}").json()
    names = {a["name"]: a for a in user_schema["attributes"]}
    assert set(names) == {"userName", "name", "active", "emails", "password", "groups"}
    assert names["userName"]["mutability"] == "immutable"  # the realm does not let usernames change
    hr.edit_username_allowed = True
    hr.save()
    assert {a["name"]: a for a in scim("get", f"Schemas/{USER}").json()["attributes"]}["userName"][
        "mutability"] == "readWrite"
    assert scim("get", "Schemas/urn:nope").status_code == 404
    assert scim("get", "Nothing/here").json()["status"] == "404"


def test_users_create_read_filter_sort_page(scim, hr):
    alice = new_user(scim, "Alice", name={"givenName": "Alice", "familyName": "Liddell"}, externalId="hr-1",
                     emails=[{"value": "alice@example.org", "primary": True}], password="alice-pass-1")
    assert alice["userName"] == "alice" and alice["active"] is True
    assert alice["meta"]["location"] == f"{BASE}/Users/{alice['id']}" and alice["meta"]["version"].startswith('W/"')
    assert "password" not in alice
    stored = User.objects.get(pk=alice["id"])
    assert (stored.email, stored.first_name, stored.attributes["externalId"]) == ("alice@example.org", "Alice", ["hr-1"])
    assert holds_password(stored, "alice-pass-1")
    duplicate = scim("post", "Users", {"schemas": [USER], "userName": "ALICE"})
    assert duplicate.status_code == 409 and duplicate.json()["scimType"] == "uniqueness"
    new_user(scim, "bob", name={"familyName": "Builder"}, active=False, emails=[{"value": "bob@example.com"}])
    new_user(scim, "carol", externalId="hr-3")
    assert scim("post", "Users", {"userName": "nos"}).json()["scimType"] == "invalidSyntax"  # no schemas

    def names(query):
        answer = scim("get", "Users?" + query)
        assert answer.status_code == 200, answer.content
        return [u["userName"] for u in answer.json()["Resources"]]

    assert names('filter=userName eq "ALICE"') == ["alice"]
    assert names('filter=emails.value co "example"&sortBy=userName') == ["alice", "bob"]
    assert names('filter=emails[value ew ".com"]') == ["bob"]
    assert names("filter=active eq false") == ["bob"]
    assert names('filter=name.familyName sw "li" or externalId eq "hr-3"&sortBy=userName') == ["alice", "carol"]
    assert names('filter=not (userName eq "bob") and externalId pr&sortBy=userName&sortOrder=descending') == [
        "carol", "alice"]
    assert names("sortBy=userName&startIndex=2&count=1") == ["bob"]
    page = scim("get", "Users?count=0").json()
    assert (page["totalResults"], page["Resources"], page["startIndex"]) == (3, [], 1)
    for bad in ('userName eq', 'nope eq "x"', 'userName xx "x"', 'active eq "yes"', '(userName eq "a"'):
        answer = scim("get", "Users?" + urlencode({"filter": bad}))
        assert answer.status_code == 400 and answer.json()["scimType"] == "invalidFilter", bad
    projected = scim("get", f"Users/{alice['id']}?attributes=userName,name.givenName").json()
    assert projected == {"schemas": [USER], "id": alice["id"], "userName": "alice", "name": {"givenName": "Alice"}}
    assert "emails" not in scim("get", "Users?excludedAttributes=emails&filter=userName eq \"alice\"").json()[
        "Resources"][0]
    everything = scim("post", ".search", {"schemas": ["urn:ietf:params:scim:api:messages:2.0:SearchRequest"],
                                          "attributes": ["userName", "displayName"]}).json()
    assert everything["totalResults"] == 3 and {"alice", "bob", "carol"} == {r["userName"] for r in everything[
        "Resources"]}
    search = scim("post", "Users/.search", {"schemas": ["urn:ietf:params:scim:api:messages:2.0:SearchRequest"],
                                            "filter": 'userName sw "c"'})
    assert [u["userName"] for u in search.json()["Resources"]] == ["carol"]


@pytest.mark.postgresql
def test_the_unfiltered_list_reads_the_tally_and_co_asks_the_index_for_rare_trigrams(scim, hr):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from realms.data import user_queries

    User.objects.bulk_create(User(realm=hr, username=f"u{i:05d}", email=f"u{i:05d}@bulk.test") for i in range(300))
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE realms_user")
    user_queries._frequencies.cache_clear()  # these users' statistics
    with CaptureQueriesContext(connection) as captured:
        page = scim("get", "Users?count=1").json()
    assert page["totalResults"] == 300  # the provisioner's service account is no one's to provision
    assert not any("COUNT(" in q["sql"] for q in captured.captured_queries), captured.captured_queries
    with CaptureQueriesContext(connection) as captured:
        found = scim("get", "Users?" + urlencode({"filter": 'emails.value co "U00123@bulk"'})).json()
    assert [u["userName"] for u in found["Resources"]] == ["u00123"] and found["totalResults"] == 1
    # "bulk" is in every address: the index is asked for the rest, strpos checks the whole value
    matching = [q["sql"] for q in captured.captured_queries if "STRPOS" in q["sql"]]
    assert len(matching) == 2, captured.captured_queries  # the count and the page
    assert all("LIKE UPPER('%0" in sql and "BULK%')" not in sql.upper() for sql in matching), matching


def test_put_etags_and_delete(scim, hr):
    alice = new_user(scim, "alice", emails=[{"value": "alice@example.org"}])
    url = f"Users/{alice['id']}"
    etag = alice["meta"]["version"]
    assert scim("get", url, HTTP_IF_NONE_MATCH=etag).status_code == 304
    replaced = scim("put", url, {"schemas": [USER], "userName": "alice", "name": {"givenName": "Al"}},
                    HTTP_IF_MATCH=etag)
    assert replaced.status_code == 200 and replaced["ETag"] != etag
    assert "emails" not in replaced.json()  # PUT replaces: no e-mail given, none kept
    assert User.objects.get(pk=alice["id"]).email == ""
    stale = scim("put", url, {"schemas": [USER], "userName": "alice"}, HTTP_IF_MATCH=etag)
    assert stale.status_code == 412 and User.objects.get(pk=alice["id"]).first_name == "Al"
    renamed = scim("put", url, {"schemas": [USER], "userName": "alicia"})
    assert renamed.status_code == 400 and renamed.json()["scimType"] == "mutability"
    assert scim("delete", url, HTTP_IF_MATCH=etag).status_code == 412
    assert scim("delete", url).status_code == 204
    assert scim("get", url).status_code == 404
    kinds = list(Event.objects.filter(realm=hr, kind=Event.ADMIN, resource_type="USER").order_by("time").values_list(
        "type", "client_id"))
    assert kinds == [("CREATE", "provisioner"), ("UPDATE", "provisioner"), ("DELETE", "provisioner")]


def test_password_policy_applies(scim, hr):
    hr.password_policy = "length(12)"
    hr.save()
    weak = scim("post", "Users", {"schemas": [USER], "userName": "weak", "password": "short"})
    assert weak.status_code == 400 and weak.json()["scimType"] == "invalidValue"
    assert not User.objects.filter(realm=hr, username="weak").exists()  # nothing kept


def test_patch_deactivation_ends_sign_in_and_refresh(scim, hr):
    app = ClientModel.objects.create(realm=hr, client_id="app", public_client=True, direct_access_grants_enabled=True)
    user = new_user(scim, "dave", password="dave-pass-1")
    grant = Client().post("/realms/hr/protocol/openid-connect/token", {
        "grant_type": "password", "client_id": app.client_id, "username": "dave", "password": "dave-pass-1"})
    assert grant.status_code == 200
    # Azure AD's shape: "Replace", no path, a boolean as a string.
    patched = scim("patch", f"Users/{user['id']}", {"schemas": [PATCH], "Operations": [
        {"op": "Replace", "value": {"active": "False"}}]})
    assert patched.status_code == 200 and patched.json()["active"] is False
    refresh = Client().post("/realms/hr/protocol/openid-connect/token", {
        "grant_type": "refresh_token", "client_id": app.client_id, "refresh_token": grant.json()["refresh_token"]})
    assert refresh.status_code == 400 and refresh.json()["error"] == "invalid_grant"
    again = Client().post("/realms/hr/protocol/openid-connect/token", {
        "grant_type": "password", "client_id": app.client_id, "username": "dave", "password": "dave-pass-1"})
    assert again.status_code in (400, 401) and again.json()["error"] == "invalid_grant"


def test_patch_paths_and_filters(scim):
    user = new_user(scim, "erin", name={"givenName": "Erin"}, emails=[{"value": "erin@a.example", "primary": True}])
    url = f"Users/{user['id']}"

    def apply(*operations):
        answer = scim("patch", url, {"schemas": [PATCH], "Operations": list(operations)})
        assert answer.status_code == 200, answer.content
        return answer.json()

    assert apply({"op": "replace", "path": "name.familyName", "value": "Smith"})["name"] == {
        "givenName": "Erin", "familyName": "Smith"}
    assert apply({"op": "remove", "path": "name.givenName"})["name"] == {"familyName": "Smith"}
    assert apply({"op": "replace", "path": 'emails[value ew "a.example"].value', "value": "erin@b.example"})[
        "emails"] == [{"value": "erin@b.example"}]
    assert apply({"op": "add", "path": "externalId", "value": "x-9"})["externalId"] == "x-9"
    assert "externalId" not in apply({"op": "remove", "path": "externalId"})
    for bad, kind in (({"op": "remove"}, "noTarget"), ({"op": "move", "path": "x"}, "invalidSyntax"),
                      ({"op": "replace", "path": "nickName", "value": "x"}, "invalidPath"),
                      ({"op": "replace", "path": 'emails[type eq "home"].value', "value": "x@y.z"}, "noTarget"),
                      ({"op": "add", "path": "groups", "value": [{"value": "g"}]}, "mutability"),
                      ({"op": "remove", "path": "userName"}, "invalidValue")):
        answer = scim("patch", url, {"schemas": [PATCH], "Operations": [bad]})
        assert answer.status_code == 400 and answer.json()["scimType"] == kind, (bad, answer.content)
    assert scim("patch", url, {"Operations": [{"op": "remove", "path": "externalId"}]}).status_code == 400


def test_groups_and_membership(scim, hr):
    alice, bob = new_user(scim, "alice"), new_user(scim, "bob")
    created = scim("post", "Groups", {"schemas": [GROUP], "displayName": "Staff", "externalId": "g-1",
                                      "members": [{"value": alice["id"]}]})
    assert created.status_code == 201, created.content
    group = created.json()
    assert group["members"] == [{"value": alice["id"], "$ref": f"{BASE}/Users/{alice['id']}", "type": "User"}]
    assert scim("get", f"Users/{alice['id']}").json()["groups"] == [
        {"value": group["id"], "$ref": f"{BASE}/Groups/{group['id']}", "display": "Staff"}]
    url = f"Groups/{group['id']}"
    add = scim("patch", url, {"schemas": [PATCH], "Operations": [
        {"op": "add", "path": "members", "value": [{"value": bob["id"]}]},
        {"op": "replace", "path": "displayName", "value": "Team"}]})
    assert add.status_code == 200 and {m["value"] for m in add.json()["members"]} == {alice["id"], bob["id"]}
    assert Group.objects.get(pk=group["id"]).name == "Team"
    removed = scim("patch", url, {"schemas": [PATCH], "Operations": [
        {"op": "remove", "path": f'members[value eq "{alice["id"]}"]'}]})
    assert [m["value"] for m in removed.json()["members"]] == [bob["id"]]
    assert [g["displayName"] for g in scim("get", f'Groups?filter=members.value eq "{bob["id"]}"').json()[
        "Resources"]] == ["Team"]
    assert scim("post", "Groups", {"schemas": [GROUP], "displayName": "Team"}).status_code == 409
    unknown = scim("post", "Groups", {"schemas": [GROUP], "displayName": "X", "members": [{"value": "nobody"}]})
    assert unknown.status_code == 400 and not Group.objects.filter(name="X").exists()
    assert scim("delete", url).status_code == 204
    assert list(Event.objects.filter(kind=Event.ADMIN, resource_type="GROUP").order_by("time").values_list(
        "type", flat=True)) == [
        "CREATE", "UPDATE", "UPDATE", "DELETE"]


def test_realm_switch_round_trips(hr):
    assert export_realm(hr)["scimApiEnabled"] is True


def test_a_user_is_created_with_one_write_of_its_row(scim, hr):
    """Every field of the document (active and externalId included) goes into the one INSERT:
    no UPDATE of the row just written, and so no second write to a registering directory."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    new_user(scim, "warm")  # the caller's session and the realm cached
    with CaptureQueriesContext(connection) as queries:
        dora = new_user(scim, "dora", active=False, externalId="hr-9")
    writes = [q["sql"].split()[:3] for q in queries.captured_queries if q["sql"].startswith(("INSERT", "UPDATE"))]
    assert [w for w in writes if '"realms_user"' in w] == [["INSERT", "INTO", '"realms_user"']]
    stored = User.objects.get(pk=dora["id"])
    assert not stored.enabled and stored.attributes["externalId"] == ["hr-9"]
