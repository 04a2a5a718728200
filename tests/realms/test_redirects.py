"""Wildcard redirect URIs cannot be left by path confusion (issue 11 finding 2): dot segments,
plain or percent-encoded (once or more, any case), and encoded separators in the part a ``*``
stands for never match, whichever protocol asks (OIDC redirect and post-logout URIs, SAML
assertion consumer URLs). What a browser would keep inside the prefix still matches."""
import pytest

from realms.http.redirects import matches

WILD = "https://wild.example.com/app/*"

ESCAPES = [
    "https://wild.example.com/app/../admin",
    "https://wild.example.com/app/%2e%2e/admin",
    "https://wild.example.com/app/%2E%2E/admin",
    "https://wild.example.com/app/.%2e/admin",
    "https://wild.example.com/app/%2e./admin",
    "https://wild.example.com/app/%2e%2e",
    "https://wild.example.com/app/x/%2e%2e/%2e%2e/admin",
    "https://wild.example.com/app/%252e%252e/admin",  # encoded twice
    "https://wild.example.com/app/..%2fadmin",
    "https://wild.example.com/app/%2e%2e%2fadmin",
    "https://wild.example.com/app/x%2F..%2F..%2Fadmin",
    "https://wild.example.com/app/..%5cadmin",
    "https://wild.example.com/app/%5c..%5cadmin",
    "https://wild.example.com/app/..\\admin",
    "https://wild.example.com/app/./x",
    "https://wild.example.com/app/%2e/x",
    "https://wild.example.com/app/x%252fy",
    "https://wild.example.com/app/%" + "25" * 6 + "2e/x",  # still encoded after five rounds
    "https://wild.example.com/app/..;/admin",  # a path parameter: Java servers resolve it as ..
    "https://wild.example.com/app/%2e%2e;x/admin",
    "https://wild.example.com/app/..%3b/admin",
    "https://wild.example.com/app/x%00y",
    "https://wild.example.com/app/x%0d%0aSet-Cookie:a",
]


@pytest.mark.parametrize("requested", ESCAPES)
def test_wildcard_tail_cannot_climb_out(requested):
    assert not matches(WILD, requested)


def test_dot_segment_completed_by_the_tail_is_refused():
    assert not matches("https://wild.example.com/app/.*", "https://wild.example.com/app/..")
    assert not matches("https://wild.example.com/app/.*", "https://wild.example.com/app/.%2e/admin")


@pytest.mark.parametrize("requested", [
    "https://wild.example.com/app/",
    "https://wild.example.com/app/cb",
    "https://wild.example.com/app/a/b/cb?x=1",
    "https://wild.example.com/app/cb?next=../admin",  # a query is not resolved by a browser
    "https://wild.example.com/app/file.name/..x/x..",  # dots inside names are not segments
    "https://wild.example.com/app/caf%C3%A9",
])
def test_wildcard_still_matches_paths_inside(requested):
    assert matches(WILD, requested)


def test_wildcard_never_matches_userinfo():
    assert not matches("https://wild.example.com*", "https://wild.example.com@evil.example/")
    assert not matches("https://wild.example.com*", "https://wild.example.com:x@evil.example/")
    assert matches("https://wild.example.com/*", "https://wild.example.com/@evil.example")  # "@" in the path: harmless
    assert matches("https://wild.example.com*", "https://wild.example.com.au/")  # a prefix is a prefix


def test_exact_registration_is_compared_character_for_character():
    registered = "https://wild.example.com/app/%2e%2e/cb"
    assert matches(registered, registered)  # exactly what was registered is the client's choice
    assert not matches("https://wild.example.com/app/cb", "https://wild.example.com/app/x/../cb")
