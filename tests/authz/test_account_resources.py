"""The Account REST API's user-managed access (Keycloak's account ResourcesService and
ResourceService, realms.authz.sharing) on Keycloak's realm-b quickstart: jdoe owns an album,
shares it with kolo by username or e-mail, and the UMA grant follows each share and revoke."""
import json

import pytest
from django.test import Client as HttpClient

from realms.models import Client, PermissionTicket
from tests.authz.test_uma import error, pat, protection, realm_b, uma, user_token  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db
REALM = "realm-b"


def account_token(username):
    resp = HttpClient().post(f"/realms/{REALM}/protocol/openid-connect/token", {
        "grant_type": "password", "client_id": "account-console", "username": username, "password": username})
    assert resp.status_code == 200, resp.content
    return resp.json()["access_token"]


def call(token, method, path, body=None, **query):
    client = HttpClient(HTTP_AUTHORIZATION=f"Bearer {token}", HTTP_ACCEPT="application/json")
    url = f"/realms/{REALM}/account/resources{path}"
    if method == "get":
        return client.get(url, query)
    return getattr(client, method)(url, json.dumps(body), content_type="application/json")


@pytest.fixture
def album(realm_b):
    realm_b.user_managed_access_allowed = True  # the export has it off: My resources answers only when on
    realm_b.save(update_fields=["user_managed_access_allowed"])
    Client.objects.filter(realm=realm_b, client_id="account-console").update(direct_access_grants_enabled=True)
    made = protection("post", "/resource_set", pat(), {
        "name": "Holidays", "resource_scopes": ["album:view", "album:delete"], "owner": "jdoe",
        "ownerManagedAccess": True, "uris": ["/album/holidays"]})
    assert made.status_code == 201, made.content
    return made.json()


def test_owner_lists_shares_and_revokes_and_the_uma_grant_follows(album):
    jdoe, kolo = account_token("jdoe"), account_token("kolo")
    mine = call(jdoe, "get", "")
    assert mine.status_code == 200, mine.content
    assert mine.json() == [{"_id": album["_id"], "name": "Holidays", "uris": ["/album/holidays"],
                            "scopes": [{"name": "album:view"}, {"name": "album:delete"}],
                            "client": {"clientId": "realm-b-client", "name": None, "baseUrl": None}}]
    assert call(kolo, "get", "").json() == []
    assert call(jdoe, "get", f"/{album['_id']}").json()["name"] == "Holidays"
    assert call(jdoe, "get", f"/{album['_id']}/permissions").json() == []

    asked = {"permission": f"{album['_id']}#album:view", "response_mode": "decision"}
    assert error(uma(user_token("kolo"), **asked)) == (403, "access_denied", "not_authorized")
    # Shared by e-mail with one scope: kolo's UMA request for it succeeds, for the other scope not.
    shared = call(jdoe, "put", f"/{album['_id']}/permissions", [{"username": "kolo@keycloak.org",
                                                                 "scopes": ["album:view"]}])
    assert shared.status_code == 204, shared.content
    assert uma(user_token("kolo"), **asked).json() == {"result": True}
    assert error(uma(user_token("kolo"), permission=f"{album['_id']}#album:delete"))[2] == "not_authorized"
    assert call(jdoe, "get", f"/{album['_id']}/permissions").json() == [
        {"username": "kolo", "firstName": "Kolo", "lastName": "Dan", "email": "kolo@keycloak.org",
         "scopes": ["album:view"]}]
    with_me = call(kolo, "get", "/shared-with-me").json()
    assert [(r["_id"], r["scopes"]) for r in with_me] == [(album["_id"], [{"name": "album:view"}])]
    others = call(jdoe, "get", "/shared-with-others").json()
    assert [p["username"] for p in others[0]["permissions"]] == ["kolo"]

    # Revoked (an empty list of scopes): the UMA request fails again.
    assert call(jdoe, "put", f"/{album['_id']}/permissions", [{"username": "kolo", "scopes": []}]).status_code == 204
    assert error(uma(user_token("kolo"), **asked))[2] == "not_authorized"
    assert call(kolo, "get", "/shared-with-me").json() == []
    assert not PermissionTicket.objects.filter(resource_id=album["_id"]).exists()


def test_pending_requests_are_listed_and_a_put_approves_them(album):
    kolo_uma = user_token("kolo")
    assert error(uma(kolo_uma, submit_request="true", permission=f"{album['_id']}#album:view"))[2] == "request_submitted"
    jdoe, kolo = account_token("jdoe"), account_token("kolo")
    pending = call(kolo, "get", "/pending-requests").json()
    assert [(r["_id"], r["scopes"]) for r in pending] == [(album["_id"], [{"name": "album:view"}])]
    requests = call(jdoe, "get", f"/{album['_id']}/permissions/requests").json()
    assert [(r["username"], r["scopes"]) for r in requests] == [("kolo", ["album:view"])]
    assert call(jdoe, "get", f"/{album['_id']}/permissions").json() == []
    # Keycloak's account console accepts by putting the scopes asked.
    assert call(jdoe, "put", f"/{album['_id']}/permissions", [{"username": "kolo", "scopes": ["album:view"]}]
                ).status_code == 204
    assert call(kolo, "get", "/pending-requests").json() == []
    assert uma(user_token("kolo"), permission=f"{album['_id']}#album:view", response_mode="decision").json() == {
        "result": True}


def test_refusals(album):
    jdoe, kolo = account_token("jdoe"), account_token("kolo")
    # Another's resource, an unknown one.
    assert call(kolo, "get", f"/{album['_id']}").status_code == 400
    assert call(kolo, "get", f"/{album['_id']}").json() == {"error": "invalid_resource"}
    assert call(kolo, "put", f"/{album['_id']}/permissions", [{"username": "kolo", "scopes": ["album:view"]}]
                ).status_code == 400
    missing = call(jdoe, "get", "/nope")
    assert missing.status_code == 404 and missing.json() == {"error": "resource_not_found"}
    # A body that is no list of permissions, an unknown user, a scope the resource lacks, the owner.
    bad = call(jdoe, "put", f"/{album['_id']}/permissions", [])
    assert bad.status_code == 400 and bad.json() == {"error": "invalid_permissions"}
    assert call(jdoe, "put", f"/{album['_id']}/permissions", [{"username": "nobody", "scopes": ["album:view"]}]
                ).status_code == 404
    scope = call(jdoe, "put", f"/{album['_id']}/permissions", [{"username": "kolo", "scopes": ["album:fly"]}])
    assert scope.status_code == 400 and scope.json()["error"] == "invalid_scope"
    assert call(jdoe, "put", f"/{album['_id']}/permissions", [{"username": "jdoe", "scopes": ["album:view"]}]
                ).status_code == 400
    assert not PermissionTicket.objects.exists()
    # The share dialog's user check: a user by username or e-mail, else 204.
    found = call(jdoe, "get", f"/{album['_id']}/user", value="kolo@keycloak.org")
    assert found.status_code == 200 and found.json()["username"] == "kolo"
    assert call(jdoe, "get", f"/{album['_id']}/user", value="nobody").status_code == 204
    # Without a token.
    assert HttpClient(HTTP_ACCEPT="application/json").get(f"/realms/{REALM}/account/resources").status_code == 401


def test_pages_of_first_and_max_with_links(album, realm_b):
    token = pat()
    for n in range(3):
        assert protection("post", "/resource_set", token, {"name": f"Album {n}", "owner": "jdoe",
                                                            "ownerManagedAccess": True}).status_code == 201
    jdoe = account_token("jdoe")
    page = call(jdoe, "get", "", first="1", max="2")
    assert [r["name"] for r in page.json()] == ["Album 0", "Album 1"]
    assert 'first=3&max=2>; rel="next"' in page["Link"] and 'first=0&max=2>; rel="prev"' in page["Link"]
    assert [r["name"] for r in call(jdoe, "get", "", name="album 2").json()] == ["Album 2"]
    assert call(jdoe, "get", "", first="x", max="1").status_code == 400
