"""The FAPI 2.0 rules as tests: a client under ``fapi-2-dpop-security-profile`` (or the mutual TLS
``fapi-2-security-profile``) is refused for each rule it breaks, with Keycloak's error at the
event Keycloak refuses it, and signs in when it follows them all: PAR, PKCE S256, the code flow
only, ``private_key_jwt`` signed with a FAPI algorithm for this issuer, DPoP-bound tokens, https
redirect URIs. (Its signing algorithms are checked where the client is written:
test_client_writes.py.)"""
import pytest
from jwcrypto import jwk

from oidc.codes import s256_challenge
from tests.oidc.browser.conftest import make_client
from tests.oidc.par.conftest import AUTH, PAR, REDIRECT, TOKEN, VERIFIER, sign_in
from tests.realms.test_signin import redirect_query

from .conftest import credentials, put_policy

pytestmark = pytest.mark.django_db
DPOP_PROFILE, MTLS_PROFILE = "fapi-2-dpop-security-profile", "fapi-2-security-profile"
FAPI_PARAMS = {"response_type": "code", "redirect_uri": REDIRECT, "scope": "openid", "state": "st", "nonce": "n",
               "code_challenge": s256_challenge(VERIFIER), "code_challenge_method": "S256"}
TOKEN_URL = f"http://testserver{TOKEN}"


def push(http, creds, **params):
    data = {**creds, **FAPI_PARAMS, **params}
    answer = http.post(PAR, {k: v for k, v in data.items() if v is not None})
    assert answer.status_code == 201, answer.content
    return answer.json()["request_uri"]


def authorize(http, creds, client_id="fapi", **params):
    """The answer to the authorization request pushed with ``params``, the user signed in."""
    answer = http.get(AUTH, {"client_id": client_id, "request_uri": push(http, creds, **params)})
    return sign_in(http, answer) if answer.status_code == 200 else answer


def code_of(answer):
    query = redirect_query(answer)
    assert "code" in query, query
    return query["code"][0]


def redeem(http, creds, code, proof=None):
    headers = {"HTTP_DPOP": proof} if proof else {}
    return http.post(TOKEN, {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
                             "code_verifier": VERIFIER, **creds}, **headers)


def refused(answer, error, description, status=400):
    assert answer.status_code == status, answer.content
    assert answer.json() == {"error": error, "error_description": description}


def redirected_error(answer, description, error="invalid_request"):
    assert answer.status_code == 302, answer.content
    query = redirect_query(answer)
    assert (query["error"], query["error_description"]) == ([error], [description]), query


@pytest.fixture
def under_dpop_profile(realm, fapi):
    put_policy(realm, DPOP_PROFILE)


def test_follows_every_rule_and_gets_a_dpop_bound_token(client, realm, fapi, bob, client_key, prover,
                                                        under_dpop_profile):
    answer = authorize(client, credentials(client_key))
    assert redirect_query(answer)["iss"] == ["http://testserver/realms/acme"]  # RFC 9207
    tokens = redeem(client, credentials(client_key), code_of(answer), prover.proof("POST", TOKEN_URL))
    assert tokens.status_code == 200, tokens.content
    assert tokens.json()["token_type"] == "DPoP"


def test_no_par(client, fapi, bob, client_key, under_dpop_profile):
    redirected_error(client.get(AUTH, {"client_id": "fapi", **FAPI_PARAMS}), "request_uri not included.")


def test_front_channel_adds_a_parameter_the_push_did_not_carry(client, fapi, bob, client_key, under_dpop_profile):
    request_uri = push(client, credentials(client_key))
    answer = client.get(AUTH, {"client_id": "fapi", "request_uri": request_uri, "prompt": "login"})
    redirected_error(answer, "PAR request did not include necessary parameters")
    # Repeating what was pushed is fine.
    request_uri = push(client, credentials(client_key))
    answer = client.get(AUTH, {"client_id": "fapi", "request_uri": request_uri, "scope": "openid"})
    assert answer.status_code == 200


def test_no_pkce(client, fapi, bob, client_key, under_dpop_profile):
    answer = authorize(client, credentials(client_key), code_challenge=None, code_challenge_method=None)
    redirected_error(answer, "Missing parameter: code_challenge_method")


def test_hybrid_flow_refused_at_the_push(client, fapi, client_key, under_dpop_profile):
    fapi.implicit_flow_enabled = True
    fapi.save()
    refused(client.post(PAR, {**credentials(client_key), **FAPI_PARAMS, "response_type": "code id_token"}),
            "invalid_request", "Implicit/Hybrid flow is prohibited.")


def test_client_assertion_for_another_audience(client, fapi, client_key, under_dpop_profile):
    # Accepted by client authentication (the token endpoint is an audience it allows), not by FAPI 2.0.
    creds = credentials(client_key, aud=TOKEN_URL)
    refused(client.post(PAR, {**creds, **FAPI_PARAMS}), "invalid_request", "invalid audience in client assertion")


def test_pkce_plain(client, fapi, bob, client_key, under_dpop_profile):
    fapi.attributes = {**fapi.attributes, "pkce.code.challenge.method": "plain"}
    fapi.save()
    answer = authorize(client, credentials(client_key), code_challenge=VERIFIER, code_challenge_method="plain")
    redirected_error(answer, "Invalid parameter: invalid code_challenge_method")


def test_no_code_verifier(client, fapi, bob, client_key, prover, under_dpop_profile):
    code = code_of(authorize(client, credentials(client_key)))
    answer = client.post(TOKEN, {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
                                 **credentials(client_key)}, HTTP_DPOP=prover.proof("POST", TOKEN_URL))
    refused(answer, "code_verifier_missing", "PKCE code verifier not specified")


def test_client_secret_authentication(client, realm, bob, prover, under_dpop_profile):
    legacy = make_client(realm, "legacy", redirect_uris=[REDIRECT])
    legacy.roles.create(realm=realm, name="fapi")
    creds = {"client_id": "legacy", "client_secret": "secret-of-legacy"}
    code = code_of(authorize(client, creds, client_id="legacy"))
    refused(redeem(client, creds, code, prover.proof("POST", TOKEN_URL)), "invalid_request",
            "Configured client authentication method not allowed for client")


def test_client_assertion_signed_with_a_non_fapi_algorithm(client, fapi, bob, client_key, prover,
                                                           under_dpop_profile):
    rsa = jwk.JWK.generate(kty="RSA", size=2048, kid="rsa")
    fapi.attributes = {**fapi.attributes, "jwks.string": '{"keys": [%s, %s]}' % (
        client_key.export_public(), rsa.export_public())}
    fapi.save()
    code = code_of(authorize(client, credentials(client_key)))
    refused(redeem(client, credentials(rsa, alg="RS256"), code, prover.proof("POST", TOKEN_URL)),
            "invalid_request", "not allowed signature algorithm.")


def test_no_sender_constrained_token(client, fapi, bob, client_key, under_dpop_profile):
    code = code_of(authorize(client, credentials(client_key)))
    refused(redeem(client, credentials(client_key), code), "invalid_dpop_proof", "DPoP proof is missing")


def test_http_redirect_uri(client, realm, fapi, bob, client_key, under_dpop_profile):
    fapi.redirect_uris = [*fapi.redirect_uris, "http://app.example/cb"]
    fapi.save()
    answer = authorize(client, credentials(client_key), redirect_uri="http://app.example/cb")
    assert answer["Location"].startswith("http://app.example/cb")
    redirected_error(answer, "Invalid redirect_uri")


def test_mutual_tls_profile_needs_a_certificate_bound_token(client, realm, fapi, bob, client_key, prover):
    put_policy(realm, MTLS_PROFILE)
    code = code_of(authorize(client, credentials(client_key)))
    refused(redeem(client, credentials(client_key), code, prover.proof("POST", TOKEN_URL)),
            "invalid_request", "Client Certification missing for MTLS HoK Token Binding")


def test_clients_outside_the_policy_are_untouched(client, realm, fapi, bob, client_key):
    put_policy(realm, DPOP_PROFILE, conditions=[{"condition": "client-roles", "configuration": {"roles": ["x"]}}])
    assert client.get(AUTH, {"client_id": "fapi", **FAPI_PARAMS}).status_code == 200  # the login page: no PAR
