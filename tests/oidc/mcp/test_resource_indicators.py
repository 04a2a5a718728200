"""RFC 8707 resource indicators at the authorization and token endpoints (Keycloak's
experimental resource-indicators semantics, decision 0074): the resource kept with the code and
on the refresh token, aud narrowed to it, and every invalid_target."""
import pytest

from oidc.models import AuthorizationCode
from realms.models import Client, Event

from .conftest import (
    MCP,
    OTHER,
    SPA_REDIRECT,
    UNKNOWN,
    authorize,
    basic,
    claims_of,
    query_of,
    redeem,
    sign_in,
    token_url,
)

pytestmark = pytest.mark.django_db
NOT_MATCHING = "The requested resource is not matching the original request."
INVALID = "The requested resource is invalid, missing, unknown, or malformed."


def refresh(http, realm, token, **extra):
    return http.post(token_url(realm), {"grant_type": "refresh_token", "refresh_token": token, **extra},
                     HTTP_AUTHORIZATION=basic())


def test_code_flow_with_resource_puts_it_in_aud_and_keeps_it_on_refresh(http, realm):
    code, verifier = sign_in(http, realm, resource=[MCP])
    assert AuthorizationCode.objects.get(realm=realm).resource == MCP  # kept with the code
    answer = redeem(http, realm, code, verifier)
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert claims_of(body["access_token"])["aud"] == MCP
    assert claims_of(body["refresh_token"])["resource"] == [MCP]
    # A refresh without resource keeps the grant's; one naming it again is the same.
    for extra in ({}, {"resource": MCP}):
        again = refresh(http, realm, body["refresh_token"], **extra)
        assert again.status_code == 200, again.content
        body = again.json()
        assert claims_of(body["access_token"])["aud"] == MCP
    details = Event.objects.filter(realm=realm, type="REFRESH_TOKEN").latest("time").details
    assert details["resource"] == MCP


def test_without_resource_the_audience_is_the_mappers(http, realm):
    code, verifier = sign_in(http, realm)
    body = redeem(http, realm, code, verifier).json()
    assert set(claims_of(body["access_token"])["aud"]) == {"account", "mcp-server"}  # the mappers' audience
    assert "resource" not in claims_of(body["refresh_token"])


def test_urn_client_resource_names_the_client_id(http, realm):
    code, verifier = sign_in(http, realm, resource=["urn:client:mcp-server"])
    body = redeem(http, realm, code, verifier).json()
    assert claims_of(body["access_token"])["aud"] == "mcp-server"


def test_public_client_reaches_a_resource_through_the_users_roles(http, realm):
    code, verifier = sign_in(http, realm, client_id="spa", redirect_uri=SPA_REDIRECT, resource=[MCP])
    answer = redeem(http, realm, code, verifier, client_id="spa", redirect_uri=SPA_REDIRECT, secret="")
    assert answer.status_code == 200, answer.content
    assert claims_of(answer.json()["access_token"])["aud"] == MCP


@pytest.mark.parametrize("resource", [UNKNOWN, OTHER, "/relative/path", MCP + "#frag", MCP + "?q=1",
                                      "urn:client:nobody"])
def test_authorization_endpoint_refuses_a_resource_with_invalid_target(http, realm, resource):
    """Unknown, one the client may not address (other-api: no mapper, no roles), not absolute,
    with a fragment: invalid_target on the redirect URI, before any sign-in."""
    page, _ = authorize(http, realm, resource=[resource])
    query = query_of(page)
    assert query["error"] == ["invalid_target"] and query["error_description"] == [INVALID]
    assert query["state"] == ["st-1"]
    assert Event.objects.filter(realm=realm, type="LOGIN_ERROR", error="invalid_target").exists()
    assert not AuthorizationCode.objects.filter(realm=realm).exists()


def test_one_bad_resource_among_good_ones_is_refused(http, realm):
    page, _ = authorize(http, realm, resource=[MCP, OTHER])
    assert query_of(page)["error"] == ["invalid_target"]


def test_repeated_resources_are_all_kept_and_a_token_request_may_narrow_them(http, realm):
    mapper = Client.objects.get(realm=realm, client_id="app").protocol_mappers.get()
    mapper.config = {**mapper.config, "included.custom.audience": OTHER}
    mapper.save()
    code, verifier = sign_in(http, realm, resource=[MCP, OTHER])
    assert AuthorizationCode.objects.get(realm=realm).resource == f"{MCP} {OTHER}"
    body = redeem(http, realm, code, verifier, resource=[OTHER]).json()
    assert claims_of(body["access_token"])["aud"] == OTHER
    assert claims_of(body["refresh_token"])["resource"] == [MCP, OTHER]  # the grant keeps both
    both = refresh(http, realm, body["refresh_token"]).json()
    assert claims_of(both["access_token"])["aud"] == [MCP, OTHER]
    narrowed = refresh(http, realm, both["refresh_token"], resource=MCP).json()
    assert claims_of(narrowed["access_token"])["aud"] == MCP


def test_token_request_cannot_widen_the_codes_resource(http, realm):
    code, verifier = sign_in(http, realm, resource=[MCP])
    answer = redeem(http, realm, code, verifier, resource=["urn:client:mcp-server"])
    assert answer.status_code == 400
    assert answer.json() == {"error": "invalid_target", "error_description": NOT_MATCHING}
    assert Event.objects.filter(realm=realm, type="CODE_TO_TOKEN_ERROR", error="invalid_target").exists()
    # The code was spent all the same.
    assert redeem(http, realm, code, verifier).json()["error"] == "invalid_grant"


def test_token_request_cannot_add_a_resource_to_a_code_without_one(http, realm):
    code, verifier = sign_in(http, realm)
    answer = redeem(http, realm, code, verifier, resource=[MCP])
    assert answer.json() == {"error": "invalid_target", "error_description": NOT_MATCHING}


def test_refresh_cannot_widen_the_grant(http, realm):
    code, verifier = sign_in(http, realm, resource=[MCP])
    body = redeem(http, realm, code, verifier).json()
    widened = refresh(http, realm, body["refresh_token"], resource=OTHER)
    assert widened.status_code == 400
    assert widened.json() == {"error": "invalid_target", "error_description": NOT_MATCHING}
    assert Event.objects.filter(realm=realm, type="REFRESH_TOKEN_ERROR", error="invalid_target").exists()
    # A grant without resources cannot gain one at refresh either.
    code, verifier = sign_in(http, realm)
    plain = redeem(http, realm, code, verifier).json()
    assert refresh(http, realm, plain["refresh_token"], resource=MCP).json()["error"] == "invalid_target"


def test_token_endpoint_refuses_a_fragment(http, realm):
    code, verifier = sign_in(http, realm, resource=[MCP])
    answer = redeem(http, realm, code, verifier, resource=[MCP + "#x"])
    assert answer.json() == {"error": "invalid_target", "error_description": INVALID}


def test_token_endpoint_checks_the_users_audience(http, realm):
    """The public client reaches mcp-server only through alice's role: without it, the token
    endpoint refuses the resource the authorization endpoint let through."""
    code, verifier = sign_in(http, realm, client_id="spa", redirect_uri=SPA_REDIRECT, resource=[MCP])
    from realms.models import User
    alice = User.objects.get(realm=realm, username="alice")
    alice.roles.clear()
    answer = redeem(http, realm, code, verifier, client_id="spa", redirect_uri=SPA_REDIRECT, secret="")
    assert answer.json() == {"error": "invalid_target", "error_description": INVALID}


def client_credentials(http, realm, **extra):
    return http.post(token_url(realm), {"grant_type": "client_credentials", **extra}, HTTP_AUTHORIZATION=basic())


def test_client_credentials_with_resource(http, realm):
    answer = client_credentials(http, realm, resource=MCP)
    assert answer.status_code == 200, answer.content
    assert claims_of(answer.json()["access_token"])["aud"] == MCP
    assert "mcp-server" in claims_of(client_credentials(http, realm).json()["access_token"])["aud"]


@pytest.mark.parametrize("resource", [UNKNOWN, OTHER, "not a uri", MCP + "#f"])
def test_client_credentials_refuses_invalid_targets(http, realm, resource):
    answer = client_credentials(http, realm, resource=resource)
    assert answer.status_code == 400
    assert answer.json() == {"error": "invalid_target", "error_description": INVALID}
    assert Event.objects.filter(realm=realm, type="CLIENT_LOGIN_ERROR", error="invalid_target").exists()
