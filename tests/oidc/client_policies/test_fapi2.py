"""The FAPI 2.0 rules as tests: a client under ``fapi-2-dpop-security-profile`` (or the mutual TLS
``fapi-2-security-profile``) is refused for each rule it breaks, with Keycloak's error, and signs
in when it follows them all: PAR, PKCE S256, nonce, ``private_key_jwt`` with an allowed
algorithm, DPoP-bound tokens, PS256-signed tokens, https redirect URIs."""
import pytest

from oidc.codes import s256_challenge
from tests.oidc.par.conftest import AUTH, PAR, REDIRECT, TOKEN, VERIFIER, sign_in
from tests.realms.test_signin import redirect_query

from .conftest import credentials, put_policy

pytestmark = pytest.mark.django_db
DPOP_PROFILE, MTLS_PROFILE = "fapi-2-dpop-security-profile", "fapi-2-security-profile"
FAPI_PARAMS = {"response_type": "code", "redirect_uri": REDIRECT, "scope": "openid", "state": "st", "nonce": "n",
               "code_challenge": s256_challenge(VERIFIER), "code_challenge_method": "S256"}


def push(http, key, creds=None, **params):
    data = {**(creds or credentials(key)), **FAPI_PARAMS, **params}
    return http.post(PAR, {k: v for k, v in data.items() if v is not None})


def code_by_par(http, key, **params):
    answer = push(http, key, **params)
    assert answer.status_code == 201, answer.content
    done = sign_in(http, http.get(AUTH, {"client_id": "fapi", "request_uri": answer.json()["request_uri"]}))
    query = redirect_query(done)
    assert "code" in query, query
    return query["code"][0], query


def redeem(http, key, code, proof=None, **extra):
    headers = {"HTTP_DPOP": proof} if proof else {}
    return http.post(TOKEN, {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
                             "code_verifier": VERIFIER, **credentials(key), **extra}, **headers)


def refused(answer, error, description, status=400):
    assert answer.status_code == status, answer.content
    assert answer.json() == {"error": error, "error_description": description}


@pytest.fixture
def under_dpop_profile(realm, fapi):
    put_policy(realm, DPOP_PROFILE)


def test_follows_every_rule_and_gets_a_dpop_bound_token(client, realm, fapi, bob, client_key, prover,
                                                        under_dpop_profile):
    code, query = code_by_par(client, client_key)
    assert query["iss"] == ["http://testserver/realms/acme"]  # RFC 9207
    answer = redeem(client, client_key, code, prover.proof("POST", f"http://testserver{TOKEN}"))
    assert answer.status_code == 200, answer.content
    assert answer.json()["token_type"] == "DPoP"


def test_no_par(client, fapi, bob, client_key, under_dpop_profile):
    answer = client.get(AUTH, {"client_id": "fapi", **FAPI_PARAMS})
    assert answer.status_code == 302
    query = redirect_query(answer)
    assert query["error"] == ["invalid_request"]
    assert query["error_description"] == ["Pushed Authorization Request is only allowed."]


def test_front_channel_cannot_change_the_pushed_request(client, fapi, bob, client_key, under_dpop_profile):
    request_uri = push(client, client_key).json()["request_uri"]
    answer = client.get(AUTH, {"client_id": "fapi", "request_uri": request_uri, "scope": "openid profile"})
    query = redirect_query(answer)
    assert query["error_description"] == ["PAR request did not include necessary parameters"]


@pytest.mark.parametrize(("params", "description"), [
    ({"code_challenge": None, "code_challenge_method": None}, "Missing parameter: code_challenge_method"),
    ({"code_challenge": VERIFIER, "code_challenge_method": "plain"}, "Invalid parameter: code_challenge_method"),
    ({"nonce": None}, "Missing parameter: nonce"),
])
def test_no_pkce_s256_or_no_nonce(client, fapi, client_key, under_dpop_profile, params, description):
    if params.get("code_challenge_method") == "plain":
        fapi.attributes = {**fapi.attributes, "pkce.code.challenge.method": "plain"}
        fapi.save()
    refused(push(client, client_key, **params), "invalid_request", description)


def test_client_secret_authentication(client, realm, bob, client_key, under_dpop_profile):
    from tests.oidc.browser.conftest import make_client
    legacy = make_client(realm, "legacy", redirect_uris=[REDIRECT])
    legacy.roles.create(realm=realm, name="fapi")
    creds = {"client_id": "legacy", "client_secret": "secret-of-legacy"}
    refused(push(client, client_key, creds), "invalid_client",
            "Configured client authentication method not allowed for client", 401)


def test_client_assertion_signed_with_a_disallowed_algorithm(client, fapi, client_key, under_dpop_profile):
    rsa = __import__("jwcrypto.jwk", fromlist=["JWK"]).JWK.generate(kty="RSA", size=2048, kid="rsa")
    fapi.attributes = {**fapi.attributes, "jwks.string": '{"keys": [%s]}' % rsa.export_public()}
    fapi.save()
    refused(push(client, client_key, credentials(rsa, alg="RS256")), "invalid_client",
            "not allowed signature algorithm.", 401)


def test_no_sender_constrained_token(client, fapi, bob, client_key, under_dpop_profile):
    code, _ = code_by_par(client, client_key)
    refused(redeem(client, client_key, code), "invalid_dpop_proof", "DPoP proof is missing")


def test_tokens_signed_with_a_disallowed_algorithm(client, realm, fapi, bob, client_key, prover,
                                                   under_dpop_profile):
    fapi.attributes = {k: v for k, v in fapi.attributes.items() if k != "access.token.signed.response.alg"}
    fapi.save()  # the realm's default, RS256, is not a FAPI algorithm
    code, _ = code_by_par(client, client_key)
    refused(redeem(client, client_key, code, prover.proof("POST", f"http://testserver{TOKEN}")),
            "invalid_request", "not allowed signature algorithm.")


def test_mutual_tls_profile_needs_a_certificate_bound_token(client, realm, fapi, bob, client_key, prover):
    put_policy(realm, MTLS_PROFILE)
    code, _ = code_by_par(client, client_key)
    refused(redeem(client, client_key, code, prover.proof("POST", f"http://testserver{TOKEN}")),
            "invalid_grant", "Client Certification missing for MTLS HoK Token Binding")


def test_clients_outside_the_policy_are_untouched(client, realm, fapi, bob, client_key, prover):
    put_policy(realm, DPOP_PROFILE, conditions=[{"condition": "client-roles", "configuration": {"roles": ["x"]}}])
    answer = client.get(AUTH, {"client_id": "fapi", **FAPI_PARAMS})
    assert answer.status_code == 200  # the login page: no PAR needed
