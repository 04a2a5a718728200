"""Response modes (query, fragment, form_post and the JARM forms) and the implicit and hybrid
response types of the authorization endpoint, as Keycloak offers them; session_state in every
successful answer; at_hash, c_hash and nonce in front-channel ID tokens; the switch
implicitFlowEnabled. JWTs are verified with joserfc against the realm's published JWKS."""
import html
import re
from urllib.parse import parse_qs, urlsplit

import pytest
from joserfc import jwt
from joserfc.jwk import KeySet

from oidc import jose
from realms.models import UserSession
from tests.oidc.browser.conftest import make_client
from tests.oidc.browser.test_browser_authorize import AUTH, _params, _sign_in

ISSUER = "http://testserver/realms/acme"
SPA = "https://spa.example/cb"


@pytest.fixture
def implicit_app(realm):
    return make_client(realm, "implicit-app", implicit_flow_enabled=True, redirect_uris=[SPA])


@pytest.fixture
def signed_in(client, realm, client_app, user_with_password):
    """A browser with an SSO session: later requests are answered at once from its cookie."""
    response = _sign_in(client, _params())
    assert response.status_code == 302
    return UserSession.objects.get(user=user_with_password)


def _fragment(response):
    assert response.status_code == 302, response.content[:300]
    parts = urlsplit(response["Location"])
    assert not parts.query or parts.query == "", response["Location"]
    return {k: v[0] for k, v in parse_qs(parts.fragment).items()}


def _verified(client, token, aud=None):
    keys = KeySet.import_key_set(client.get("/realms/acme/protocol/openid-connect/certs").json())
    claims = jwt.decode(token, keys).claims
    assert claims["iss"] == ISSUER and (aud is None or claims["aud"] == aud)
    return claims


def test_fragment_and_query_carry_code_state_session_state_and_iss(client, signed_in):
    query = parse_qs(urlsplit(client.get(AUTH, _params())["Location"]).query)
    assert set(query) == {"code", "state", "session_state", "iss"}
    assert query["session_state"] == [signed_in.pk]
    response = client.get(AUTH, _params(response_mode="fragment"))
    assert response["Location"].startswith("https://app.example/cb#")
    fragment = _fragment(response)
    assert set(fragment) == {"code", "state", "session_state", "iss"}
    assert fragment["state"] == "st-123" and fragment["session_state"] == signed_in.pk and fragment["iss"] == ISSUER


@pytest.mark.parametrize("mode, delivered_in", [
    ("query.jwt", "query"), ("jwt", "query"), ("fragment.jwt", "fragment"), ("form_post.jwt", "form")])
def test_jarm_response_is_signed_with_the_realm_key(client, signed_in, mode, delivered_in):
    response = client.get(AUTH, _params(response_mode=mode))
    if delivered_in == "form":
        body = response.content.decode()
        assert response.status_code == 200 and 'action="https://app.example/cb"' in body
        fields = dict(re.findall(r'name="([^"]+)" value="([^"]*)"', body))
        assert set(fields) == {"response"}
        token = html.unescape(fields["response"])
    else:
        parts = urlsplit(response["Location"])
        params = parse_qs(parts.query if delivered_in == "query" else parts.fragment)
        assert set(params) == {"response"}  # iss and state travel inside the JWT
        token = params["response"][0]
    claims = _verified(client, token, "web-app")
    assert claims["state"] == "st-123" and claims["session_state"] == signed_in.pk and claims["code"]
    assert claims["exp"] > claims.get("iat", 0)


def test_jarm_errors_are_signed_too(client, client_app):
    response = client.get(AUTH, _params(response_mode="query.jwt", prompt="none"))
    claims = _verified(client, parse_qs(urlsplit(response["Location"]).query)["response"][0], "web-app")
    assert claims["error"] == "login_required" and claims["state"] == "st-123"


PARTS = {
    "token": {"access_token", "token_type", "expires_in"},
    "id_token": {"id_token"},
    "id_token token": {"id_token", "access_token", "token_type", "expires_in"},
    "code id_token": {"code", "id_token"},
    "code token": {"code", "access_token", "token_type", "expires_in"},
    "code id_token token": {"code", "id_token", "access_token", "token_type", "expires_in"},
}


@pytest.mark.parametrize("response_type", list(PARTS))
def test_each_implicit_and_hybrid_type_returns_exactly_its_parts(client, realm, signed_in, implicit_app, response_type):
    response = client.get(AUTH, _params("implicit-app", SPA, response_type=response_type, nonce="n-42"))
    assert response["Location"].startswith(SPA + "#")  # fragment: the default for them
    got = _fragment(response)
    assert set(got) == PARTS[response_type] | {"state", "session_state", "iss"}
    assert got["session_state"] == signed_in.pk
    if "access_token" in got:
        assert got["token_type"] == "Bearer"
        assert int(got["expires_in"]) == realm.access_token_lifespan_for_implicit_flow
        assert _verified(client, got["access_token"])["azp"] == "implicit-app"
        assert client.get("/realms/acme/protocol/openid-connect/userinfo",
                          HTTP_AUTHORIZATION="Bearer " + got["access_token"]).json()["preferred_username"] == "bob"
    if "id_token" in got:
        id_token = _verified(client, got["id_token"], "implicit-app")
        alg = jose.parse(got["id_token"])[0]["alg"]
        assert id_token["nonce"] == "n-42" and id_token["sid"] == signed_in.pk
        assert id_token.get("at_hash") == (jose.half_hash(got["access_token"], alg) if "access_token" in got else None)
        assert id_token.get("c_hash") == (jose.half_hash(got["code"], alg) if "code" in got else None)


def test_hybrid_code_is_redeemed_at_the_token_endpoint(client, realm, signed_in, implicit_app):
    got = _fragment(client.get(AUTH, _params("implicit-app", SPA, response_type="code id_token", nonce="n-7")))
    tokens = client.post("/realms/acme/protocol/openid-connect/token", {
        "grant_type": "authorization_code", "code": got["code"], "redirect_uri": SPA,
        "client_id": "implicit-app", "client_secret": "secret-of-implicit-app"}).json()
    assert _verified(client, tokens["id_token"], "implicit-app")["nonce"] == "n-7" and tokens["refresh_token"]


@pytest.mark.parametrize("response_type", ["token", "id_token token", "code id_token"])
def test_implicit_and_hybrid_are_refused_when_the_switch_is_off(client, client_app, response_type):
    got = _fragment(client.get(AUTH, _params(response_type=response_type, nonce="n")))
    assert got["error"] == "unauthorized_client" and got["state"] == "st-123"
    assert "Implicit flow is disabled for the client" in got["error_description"]


def test_unknown_response_type_is_unsupported(client, implicit_app):
    got = _fragment(client.get(AUTH, _params("implicit-app", SPA, response_type="token code token", nonce="n")))
    assert got["error"] == "unsupported_response_type"


def test_nonce_is_required_for_front_channel_id_tokens(client, implicit_app):
    got = _fragment(client.get(AUTH, _params("implicit-app", SPA, response_type="id_token token")))
    assert got["error"] == "invalid_request" and got["error_description"] == "Missing parameter: nonce"
    # A pure OAuth request for an access token alone needs none (Keycloak's rule): on to sign-in.
    page = client.get(AUTH, _params("implicit-app", SPA, response_type="token", scope=""))
    assert page.status_code == 200 and b'name="password"' in page.content


def test_pkce_is_not_asked_of_a_public_client_without_a_code(client, realm):
    make_client(realm, "public-implicit", public_client=True, implicit_flow_enabled=True, redirect_uris=[SPA])
    page = client.get(AUTH, _params("public-implicit", SPA, response_type="id_token token", nonce="n"))
    assert page.status_code == 200 and b'name="password"' in page.content
    hybrid = _fragment(client.get(AUTH, _params("public-implicit", SPA, response_type="code id_token", nonce="n")))
    assert hybrid["error"] == "invalid_request"  # a code still needs PKCE from a public client


def test_tokens_never_go_in_the_query(client, implicit_app):
    got = _fragment(client.get(AUTH, _params("implicit-app", SPA, response_type="id_token", nonce="n",
                                             response_mode="query")))
    assert got["error"] == "invalid_request" and "not allowed for implicit or hybrid flow" in got["error_description"]


def test_discovery_advertises_types_modes_and_the_iframe(client, realm):
    doc = client.get("/realms/acme/.well-known/openid-configuration").json()
    assert doc["response_types_supported"] == [
        "code", "token", "id_token", "id_token token", "code id_token", "code token", "code id_token token"]
    assert doc["check_session_iframe"] == ISSUER + "/protocol/openid-connect/login-status-iframe.html"
    assert "implicit" in doc["grant_types_supported"]
    assert client.get(urlsplit(doc["check_session_iframe"]).path).status_code == 200
