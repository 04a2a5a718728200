"""Redirect URI matching (spec 1 §4 and §5.4): exact string match, opt-in wildcard, the native
app loopback port exception, and post-logout redirect URIs."""
import pytest

from oidc.logout import post_logout_redirect_uris
from realms.http.redirects import is_valid_redirect_uri, matches, with_params
from realms.models import Client


@pytest.mark.parametrize("registered, requested, ok", [
    ("https://app.example/cb", "https://app.example/cb", True),
    ("https://app.example/cb", "https://app.example/cb/", False),  # trailing slash differs
    ("https://app.example/cb/", "https://app.example/cb", False),
    ("https://app.example/cb", "https://app.example/cb?x=1", False),  # query differs
    ("https://app.example/cb?x=1", "https://app.example/cb?x=1", True),
    ("https://app.example/cb?x=1", "https://app.example/cb?x=2", False),
    ("https://app.example/cb", "https://APP.example/cb", False),  # no normalisation at all
    ("https://app.example/cb", "http://app.example/cb", False),
    ("https://app.example/cb", "https://app.example:443/cb", False),
    ("https://app.example/cb", "https://app.example/cb#frag", False),
    ("https://app.example/cb", "https://app.example.evil/cb", False),
    # Loopback: any port for an http loopback registration (RFC 8252 §7.3).
    ("http://127.0.0.1/native", "http://127.0.0.1:53127/native", True),
    ("http://127.0.0.1:8000/native", "http://127.0.0.1:9/native", True),
    ("http://[::1]/native", "http://[::1]:61000/native", True),
    ("http://127.0.0.1/native", "http://127.0.0.1:53127/other", False),
    ("http://127.0.0.1/native", "http://127.0.0.1:53127/native?x=1", False),
    ("http://127.0.0.1/native", "http://127.0.0.2:53127/native", False),
    ("http://127.0.0.1/native", "http://[::1]:53127/native", False),
    ("http://127.0.0.1/native", "http://user@127.0.0.1:53127/native", False),
    ("http://localhost/native", "http://localhost:53127/native", False),  # not a loopback literal
    ("https://127.0.0.1/native", "https://127.0.0.1:8443/native", False),  # https: exact only
    ("https://127.0.0.1:8443/native", "https://127.0.0.1:8443/native", True),
    ("http://127.0.0.1/native", "https://127.0.0.1:53127/native", False),
    # Wildcard only when registered so.
    ("https://app.example/*", "https://app.example/anything?x=1", True),
    ("https://app.example/cb/*", "https://app.example/cb/../admin", False),
    ("https://app.example/*", "https://app.example.evil/x", False),
    ("https://app.example/cb", "https://app.example/cb*", False),
    ("", "https://app.example/cb", False),
])
def test_redirect_uri_matching(registered, requested, ok):
    assert matches(registered, requested) is ok


def test_any_registered_uri_can_match():
    assert is_valid_redirect_uri(["https://a.example/cb", "https://b.example/cb"], "https://b.example/cb")
    assert not is_valid_redirect_uri([], "https://b.example/cb")
    assert not is_valid_redirect_uri(None, "https://b.example/cb")


def test_post_logout_redirect_uris_plus_means_redirect_uris():
    client = Client(redirect_uris=["https://a.example/cb"],
                    attributes={"post.logout.redirect.uris": "https://a.example/bye##+"})
    assert post_logout_redirect_uris(client) == ["https://a.example/bye", "https://a.example/cb"]
    assert post_logout_redirect_uris(Client(redirect_uris=["https://a.example/cb"])) == []


def test_with_params_keeps_registered_query():
    assert with_params("https://a.example/cb?x=1", {"code": "c", "state": ""}) == "https://a.example/cb?x=1&code=c"
    assert with_params("https://a.example/cb", {"error": "access_denied", "state": "a b"}) == \
        "https://a.example/cb?error=access_denied&state=a+b"


# Through the real authorization endpoint (issue 11 finding 2) -----------------------------------

AUTH = "/realms/acme/protocol/openid-connect/auth"


@pytest.mark.parametrize("tail", [
    "%2e%2e/admin", "%2E%2E/admin", ".%2e/admin", "%2e./admin", "..%2fadmin", "..%5cadmin",
    "%2e%2e%2fadmin", "%252e%252e/admin", "../admin", "..;/admin",
])
def test_authorization_endpoint_refuses_wildcard_escapes(client, realm, tail):
    from tests.oidc.browser.conftest import make_client

    make_client(realm, "wild", redirect_uris=["https://wild.example.com/app/*"])
    params = {"client_id": "wild", "response_type": "code", "scope": "openid", "state": "s",
              "redirect_uri": f"https://wild.example.com/app/{tail}"}
    response = client.get(AUTH, params)
    assert response.status_code == 400 and not response.has_header("Location")
    assert "Invalid parameter: redirect_uri" in response.content.decode()
    params["redirect_uri"] = "https://wild.example.com/app/cb"
    assert client.get(AUTH, params).status_code == 200  # the login page: the wildcard still works
