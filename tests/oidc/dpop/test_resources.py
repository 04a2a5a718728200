"""DPoP-bound tokens where they are presented (RFC 9449 §6, §7, §9): userinfo, introspection, and
the resource-server helper (``require_bearer``, DRF's ``BearerAuthentication``) against a live
server's JWKS."""
import pytest
import requests
from django.http import JsonResponse
from django.test import RequestFactory, override_settings
from rest_framework.response import Response
from rest_framework.views import APIView

from oidc import dpop
from oidc.resource_server import BearerAuthentication, require_bearer
from realms.models import ProtocolMapper
from tests.oidc.endpoints.conftest import SECRET, basic, client_of

from .conftest import Prover, endpoint, set_attributes

AUDIENCE = "orders-api"


def bound_token(http, realm, prover):
    url = endpoint(realm, "token")
    body = http.post(url, {"grant_type": "client_credentials"}, HTTP_AUTHORIZATION=basic("app", SECRET),
                     HTTP_DPOP=prover.proof("POST", url)).json()
    assert body["token_type"] == "DPoP", body
    return body["access_token"]


def challenge(response):
    return response["WWW-Authenticate"]


# Userinfo ----------------------------------------------------------------------------------------

def userinfo(http, realm, token, proof=None, scheme="DPoP", method="get"):
    headers = {"HTTP_AUTHORIZATION": f"{scheme} {token}"}
    if proof is not None:
        headers["HTTP_DPOP"] = proof
    return getattr(http, method)(endpoint(realm, "userinfo"), **headers)


def test_userinfo_with_a_proof(http, realm, prover):
    token = bound_token(http, realm, prover)
    response = userinfo(http, realm, token, prover.proof("GET", endpoint(realm, "userinfo"), access_token=token))
    assert response.status_code == 200, response.json()
    assert response.json()["preferred_username"] == "service-account-app"
    posted = userinfo(http, realm, token, prover.proof("POST", endpoint(realm, "userinfo"), access_token=token),
                      method="post")
    assert posted.status_code == 200


@pytest.mark.parametrize("case", ["as_bearer", "no_proof", "no_ath", "other_token_ath", "other_key", "replay",
                                  "wrong_htu", "wrong_htm"])
def test_userinfo_refusals(http, realm, prover, case):
    token = bound_token(http, realm, prover)
    url = endpoint(realm, "userinfo")
    good = prover.proof("GET", url, access_token=token)
    expected = ("invalid_dpop_proof", None)
    if case == "as_bearer":
        response = userinfo(http, realm, token, good, scheme="Bearer")
        expected = ("invalid_token", "The access token type is DPoP but Authorization Header is not DPoP")
    elif case == "no_proof":
        response = userinfo(http, realm, token)
        expected = ("invalid_dpop_proof", "DPoP proof is missing")
    elif case == "no_ath":
        response = userinfo(http, realm, token, prover.proof("GET", url))
        expected = ("invalid_dpop_proof", "No access token hash in DPoP proof")
    elif case == "other_token_ath":
        response = userinfo(http, realm, token, prover.proof("GET", url, access_token=token + "x"))
        expected = ("invalid_dpop_proof", "DPoP proof access token hash mismatch")
    elif case == "other_key":
        response = userinfo(http, realm, token, Prover().proof("GET", url, access_token=token))
        expected = ("invalid_token", "DPoP confirmation doesn't match DPoP proof")
    elif case == "replay":
        assert userinfo(http, realm, token, good).status_code == 200
        response = userinfo(http, realm, token, good)
        expected = ("invalid_dpop_proof", "DPoP proof has already been used")
    elif case == "wrong_htu":
        response = userinfo(http, realm, token, prover.proof("GET", endpoint(realm, "token"), access_token=token))
        expected = ("invalid_dpop_proof", "DPoP HTTP URL mismatch")
    else:
        response = userinfo(http, realm, token, prover.proof("POST", url, access_token=token))
        expected = ("invalid_dpop_proof", "DPoP HTTP method mismatch")
    assert response.status_code == 401
    assert response.json() == {"error": expected[0], "error_description": expected[1]}
    assert challenge(response).startswith(f'DPoP algs="{" ".join(dpop.ALGORITHMS)}", error="{expected[0]}"')


def test_userinfo_unbound_token_with_the_dpop_scheme(http, realm, prover):
    token = http.post(endpoint(realm, "token"), {"grant_type": "client_credentials"},
                      HTTP_AUTHORIZATION=basic("app", SECRET)).json()["access_token"]
    assert userinfo(http, realm, token, scheme="Bearer").status_code == 200
    response = userinfo(http, realm, token, prover.proof("GET", endpoint(realm, "userinfo"), access_token=token))
    assert response.status_code == 401 and response.json()["error"] == "invalid_token"


def test_userinfo_nonce_for_a_client_that_requires_one(http, realm, prover):
    token = bound_token(http, realm, prover)
    set_attributes(realm, "app", **{dpop.REQUIRE_NONCE: "true"})
    url = endpoint(realm, "userinfo")
    first = userinfo(http, realm, token, prover.proof("GET", url, access_token=token))
    assert first.status_code == 401 and first.json()["error"] == "use_dpop_nonce"
    assert challenge(first).startswith('DPoP algs="') and 'error="use_dpop_nonce"' in challenge(first)
    ok = userinfo(http, realm, token, prover.proof("GET", url, access_token=token, nonce=first["DPoP-Nonce"]))
    assert ok.status_code == 200 and ok["DPoP-Nonce"]


# Introspection -----------------------------------------------------------------------------------

def test_introspection_answers_cnf_and_token_type(http, realm, prover):
    token = bound_token(http, realm, prover)
    body = http.post(endpoint(realm, "token/introspect"), {"token": token},
                     HTTP_AUTHORIZATION=basic("app", SECRET)).json()
    assert body["active"] is True and body["token_type"] == "DPoP" and body["cnf"] == {"jkt": prover.jkt}
    plain = http.post(endpoint(realm, "token"), {"grant_type": "client_credentials"},
                      HTTP_AUTHORIZATION=basic("app", SECRET)).json()["access_token"]
    body = http.post(endpoint(realm, "token/introspect"), {"token": plain},
                     HTTP_AUTHORIZATION=basic("app", SECRET)).json()
    assert body["token_type"] == "Bearer" and "cnf" not in body


# The resource-server helper ------------------------------------------------------------------------

@pytest.fixture
def live_realm(live_server, realm):
    ProtocolMapper.objects.create(client=client_of(realm, "app"), name="orders audience",
                                  protocol_mapper="oidc-audience-mapper",
                                  config={"included.custom.audience": AUDIENCE, "access.token.claim": "true"})
    return realm


def live_token(live_server, realm, prover=None):
    url = f"{live_server.url}/realms/{realm.name}/protocol/openid-connect/token"
    headers = {"DPoP": prover.proof("POST", url)} if prover else {}
    response = requests.post(url, data={"grant_type": "client_credentials"}, auth=("app", SECRET), headers=headers,
                             timeout=10)
    assert response.status_code == 200, response.text
    return response.json()["access_token"]


API = "http://testserver/orders"


def api_request(token, proof=None, scheme="DPoP", method="get"):
    headers = {"HTTP_AUTHORIZATION": f"{scheme} {token}"}
    if proof:
        headers["HTTP_DPOP"] = proof
    return getattr(RequestFactory(), method)("/orders", **headers)


def protected(live_server, realm, **options):
    @require_bearer(issuer=f"{live_server.url}/realms/{realm.name}", audience=AUDIENCE, **options)
    def view(request):
        return JsonResponse({"sub": request.token["sub"]})
    return view


def test_helper_accepts_a_bound_token_with_its_proof(live_server, live_realm, prover):
    view = protected(live_server, live_realm)
    token = live_token(live_server, live_realm, prover)
    assert view(api_request(token, prover.proof("GET", API, access_token=token))).status_code == 200
    # Plain bearer tokens as before.
    plain = live_token(live_server, live_realm)
    assert view(api_request(plain, scheme="Bearer")).status_code == 200


@pytest.mark.parametrize("case", ["as_bearer", "no_proof", "ath", "other_key", "replay", "htu", "htm"])
def test_helper_refusals(live_server, live_realm, prover, case):
    view = protected(live_server, live_realm)
    token = live_token(live_server, live_realm, prover)
    good = prover.proof("GET", API, access_token=token)
    requests_by_case = {
        "as_bearer": api_request(token, good, scheme="Bearer"),
        "no_proof": api_request(token),
        "ath": api_request(token, prover.proof("GET", API, access_token="another")),
        "other_key": api_request(token, Prover().proof("GET", API, access_token=token)),
        "replay": api_request(token, good),
        "htu": api_request(token, prover.proof("GET", "http://testserver/other", access_token=token)),
        "htm": api_request(token, prover.proof("POST", API, access_token=token)),
    }
    if case == "replay":
        assert view(api_request(token, good)).status_code == 200
    response = view(requests_by_case[case])
    assert response.status_code == 401
    assert challenge(response).startswith("DPoP algs=")
    error = "invalid_token" if case in ("as_bearer", "other_key") else "invalid_dpop_proof"
    assert f'error="{error}"' in challenge(response)


def test_helper_htu_from_the_configured_base_url(live_server, live_realm, prover):
    """The URL a client called is the server's own (IDP_BASE_URL when set), never a Host header's."""
    view = protected(live_server, live_realm)
    token = live_token(live_server, live_realm, prover)
    with override_settings(IDP_BASE_URL="https://api.example"):
        proof = prover.proof("GET", "https://api.example/orders", access_token=token)
        assert view(api_request(token, proof)).status_code == 200
        forged = prover.proof("GET", API, access_token=token)
        assert view(api_request(token, forged)).status_code == 401


def test_helper_nonce(live_server, live_realm, prover):
    view = protected(live_server, live_realm, dpop_nonce=True)
    token = live_token(live_server, live_realm, prover)
    first = view(api_request(token, prover.proof("GET", API, access_token=token)))
    assert first.status_code == 401 and 'error="use_dpop_nonce"' in challenge(first)
    ok = view(api_request(token, prover.proof("GET", API, access_token=token, nonce=first["DPoP-Nonce"])))
    assert ok.status_code == 200 and ok["DPoP-Nonce"]
    # The authorization server's nonce is not this API's.
    foreign = dpop.nonce(dpop.realm_nonce_scope(live_realm))
    refused = view(api_request(token, prover.proof("GET", API, access_token=token, nonce=foreign)))
    assert refused.status_code == 401 and 'error="use_dpop_nonce"' in challenge(refused)


class Orders(APIView):
    authentication_classes = [BearerAuthentication]

    def get(self, request):
        return Response({"sub": request.user.pk})


def test_drf_authentication(live_server, live_realm, prover):
    conf = {"ISSUER": f"{live_server.url}/realms/{live_realm.name}", "AUDIENCE": AUDIENCE}
    token = live_token(live_server, live_realm, prover)
    with override_settings(OIDC_RESOURCE_SERVER=conf):
        ok = Orders.as_view()(api_request(token, prover.proof("GET", API, access_token=token)))
        assert ok.status_code == 200
        as_bearer = Orders.as_view()(api_request(token, scheme="Bearer"))
        assert as_bearer.status_code == 401 and as_bearer["WWW-Authenticate"].startswith("DPoP algs=")
        plain = live_token(live_server, live_realm)
        assert Orders.as_view()(api_request(plain, scheme="Bearer")).status_code == 200
