"""One trailing slash on an Admin REST API route is the same route, as Keycloak (Quarkus) answers
it: Keycloak's JavaScript admin client sends ``realms/``, ``{realm}/users/`` and the like for find
and create since 26.7. Answered in place (a POST's body arrives), never redirected; two slashes
stay the catch-all's 404. Walked over every registered route, so a route any app adds is covered."""
import re

import pytest
from django.test import Client

from realms.admin_api import errors, resources
from realms.models import Realm, User
from tests.realms.test_admin_permissions import call
from tests.realms.test_admin_rest_api import acme, master_api  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db


def paths(realm_name):
    """(route, path) of each registered route, the path with the realm's name and ``nope`` for
    every other argument."""
    for pattern in resources.patterns():
        route = str(pattern.pattern)
        yield route, re.sub(r"<\w+:(\w+)>", lambda m: realm_name if m.group(1) == "realm" else "nope", route)


def no_route(resp):
    return resp.status_code == 404 and errors.NO_ROUTE in resp.content.decode()


def test_every_route_answers_get_and_post_the_same_with_one_trailing_slash(master_api, acme):  # noqa: F811
    walked = 0
    for route, path in paths("acme"):
        for method in ("get", "post"):
            plain, slashed = call(master_api, method, path), call(master_api, method, path + "/")
            assert not no_route(plain), (method, path)
            assert slashed.status_code == plain.status_code, (method, path, plain.content, slashed.content)
            assert slashed.has_header("Location") == plain.has_header("Location"), (method, path)
            if method == "get":
                assert slashed.content == plain.content, (method, path)
            if "/" in path:
                assert no_route(call(master_api, method, path.replace("/", "//", 1))), (method, path)
            if "<path:" not in route:  # a path argument takes any slashes, as Keycloak's {path: .*}
                assert no_route(call(master_api, method, path + "//")), (method, path)
        walked += 1
    assert walked == len(resources.patterns()) > 100


def test_a_post_with_a_trailing_slash_keeps_its_body(master_api, acme):  # noqa: F811
    resp = master_api("post", "acme/users/", {"username": "slashed", "email": "slashed@example.org"})
    assert resp.status_code == 201, resp.content
    user = User.objects.get(realm=acme, username="slashed")
    assert resp["Location"].endswith(f"/admin/realms/acme/users/{user.pk}")  # the canonical path
    assert user.email == "slashed@example.org"
    assert [u["username"] for u in master_api("get", "acme/users/", search="slash").json()] == ["slashed"]

    resp = master_api("post", "acme/users/", {"username": "slashed"})
    assert resp.status_code == 409 and resp.json() == {"errorMessage": "User exists with same username"}
    assert master_api("post", "acme/users/", {"username": ""}).status_code == 400
    assert User.objects.filter(realm=acme).count() == 1


def test_the_realm_list_and_serverinfo_take_one_trailing_slash(master_api):  # noqa: F811
    listed = master_api("get", "/admin/realms/")
    assert listed.status_code == 200 and listed.json() == master_api("get", "/admin/realms").json()
    resp = master_api("post", "/admin/realms/", {"realm": "slashed", "displayName": "Slashed"})
    assert resp.status_code == 201, resp.content
    assert Realm.objects.get(name="slashed").display_name == "Slashed"
    assert master_api("post", "/admin/realms/", {"realm": "slashed"}).status_code == 409
    assert no_route(master_api("get", "/admin/realms//"))
    assert no_route(master_api("post", "/admin/realms//", {"realm": "other"}))
    assert not Realm.objects.filter(name="other").exists()

    info = master_api("get", "/admin/serverinfo/")
    assert info.status_code == 200 and info.json()["systemInfo"]["version"].startswith("26.")
    assert master_api("get", "/admin/serverinfo//").status_code == 404


def test_without_a_token_a_slashed_route_is_refused_as_the_plain_one(acme):  # noqa: F811
    for path in ("/admin/realms/", "/admin/realms/acme/users/", "/admin/realms/acme/groups/", "/admin/serverinfo/"):
        assert Client().get(path).status_code == 401, path
