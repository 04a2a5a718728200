"""``permission_resource_format=uri`` and ``permission_resource_matching_uri`` on the UMA grant
(Keycloak's addPermissionsByUri): resources named by one of their URIs, or by the resource
server's URI pattern that best matches (templates, then the longest prefix, then ``/*``)."""
import pytest

from tests.authz.test_uma import error, pat, protection, realm_b, uma, user_token  # noqa: F401

pytestmark = pytest.mark.django_db


def by_uri(token, permission, matching=None):
    params = {"permission": permission, "permission_resource_format": "uri", "response_mode": "permissions"}
    if matching is not None:
        params["permission_resource_matching_uri"] = matching
    return uma(token, **params)


def test_resources_by_uri_exact_and_matching(realm_b):  # noqa: F811
    jdoe, kolo = user_token("jdoe"), user_token("kolo")
    # the quickstart: Default Resource "/*", Premium Resource "/realm-b/premium/*"
    assert [p["rsname"] for p in by_uri(kolo, "/realm-b/premium/*").json()] == ["Premium Resource"]
    assert by_uri(jdoe, "/realm-b/premium/*").status_code == 403
    assert error(by_uri(kolo, "/realm-b/premium/album")) == (
        400, "invalid_resource", "Resource with uri [/realm-b/premium/album] does not exist.")
    # matching: the longest prefix wins over "/*"
    assert [p["rsname"] for p in by_uri(kolo, "/realm-b/premium/album", "true").json()] == ["Premium Resource"]
    assert by_uri(jdoe, "/realm-b/premium/album", "true").status_code == 403
    assert [p["rsname"] for p in by_uri(jdoe, "/realm-b/free", "true").json()] == ["Default Resource"]
    # a template beats a prefix
    created = protection("post", "/resource_set", pat(), {"name": "Album", "uris": ["/realm-b/premium/albums/{id}"],
                                                           "type": "urn:realm-b-client:resources:premium"})
    assert created.status_code == 201, created.content
    assert [p["rsname"] for p in by_uri(kolo, "/realm-b/premium/albums/7", "true").json()] == ["Album"]
    assert [p["rsname"] for p in by_uri(kolo, "/realm-b/premium/albums/7/tracks", "true").json()] == [
        "Premium Resource"]


def test_the_protection_api_finds_resources_by_matching_uri(realm_b):  # noqa: F811
    token = pat()
    exact = protection("get", "/resource_set", token, uri="/realm-b/premium/*").json()
    assert len(exact) == 1
    assert protection("get", "/resource_set", token, uri="/realm-b/premium/album").json() == []
    assert protection("get", "/resource_set", token, uri="/realm-b/premium/album", matchingUri="true").json() == exact


@pytest.mark.parametrize("params, expected", [
    ({"permission": "", "permission_resource_format": "uri"}, (400, "invalid_request", "You must provide the uri")),
    ({"permission": "/x", "permission_resource_format": "name"},
     (400, "invalid_request", "Invalid permission_resource_format")),
])
def test_refusals(realm_b, params, expected):  # noqa: F811
    assert error(uma(user_token("jdoe"), **params)) == expected
