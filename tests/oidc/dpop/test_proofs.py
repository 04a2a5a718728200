"""Each check of a DPoP proof at the token endpoint (RFC 9449 §4.3), refused with
``invalid_dpop_proof`` and Keycloak's description; a refused proof issues no token."""
import json
import time

import pytest
from jwcrypto import jwk

from oidc import dpop
from tests.oidc.endpoints.conftest import SECRET, basic

from .conftest import Prover, endpoint


def cc(http, realm, proof, **headers):
    return http.post(endpoint(realm, "token"), {"grant_type": "client_credentials"},
                     HTTP_AUTHORIZATION=basic("app", SECRET), HTTP_DPOP=proof, **headers)


def refused(response, description):
    body = response.json()
    assert response.status_code == 400, body
    assert body == {"error": "invalid_dpop_proof", "error_description": description}
    assert "access_token" not in body


def test_a_valid_proof_binds(http, realm, prover):
    response = cc(http, realm, prover.proof("POST", endpoint(realm, "token")))
    assert response.status_code == 200 and response.json()["token_type"] == "DPoP"


@pytest.mark.parametrize("typ", ["jwt", "JWT", "jwt+dpop", None])
def test_typ(http, realm, prover, typ):
    refused(cc(http, realm, prover.proof("POST", endpoint(realm, "token"), header={"typ": typ})),
            f"Invalid or missing type in DPoP header: {typ}")


def test_alg_none(http, realm, prover):
    good = prover.proof("POST", endpoint(realm, "token"))
    head = json.loads(dpop.jose.b64d(good.split(".")[0]))
    unsigned = dpop.jose.b64e(json.dumps({**head, "alg": "none"}).encode()) + "." + good.split(".")[1] + "."
    refused(cc(http, realm, unsigned), "Unsupported DPoP algorithm: none")


def test_alg_hs256(http, realm, prover):
    secret = jwk.JWK.generate(kty="oct", size=256)
    # An HMAC proof "keyed" with the proof's public key, or with a symmetric JWK: neither is a proof.
    refused(cc(http, realm, prover.proof("POST", endpoint(realm, "token"), alg="HS256", key=secret)),
            "Unsupported DPoP algorithm: HS256")


def test_private_key_in_header(http, realm, prover):
    private = json.loads(prover.key.export_private())
    refused(cc(http, realm, prover.proof("POST", endpoint(realm, "token"), header={"jwk": private})),
            "Private key is present in DPoP header")


def test_symmetric_key_in_header(http, realm, prover):
    secret = json.loads(jwk.JWK.generate(kty="oct", size=256).export())
    refused(cc(http, realm, prover.proof("POST", endpoint(realm, "token"), header={"jwk": secret})),
            "Private key is present in DPoP header")


def test_no_jwk(http, realm, prover):
    refused(cc(http, realm, prover.proof("POST", endpoint(realm, "token"), header={"jwk": None})),
            "No JWK in DPoP header")


def test_signature_by_another_key(http, realm, prover):
    other = jwk.JWK.generate(kty="EC", crv="P-256")
    refused(cc(http, realm, prover.proof("POST", endpoint(realm, "token"), key=other)), "DPoP verification failure")


def test_tampered_payload(http, realm, prover):
    head, _, sig = prover.proof("POST", endpoint(realm, "token")).split(".")
    body = dpop.jose.b64e(json.dumps({"jti": "x", "htm": "POST", "htu": endpoint(realm, "token"),
                                      "iat": int(time.time())}).encode())
    refused(cc(http, realm, f"{head}.{body}.{sig}"), "DPoP verification failure")


def test_htm(http, realm, prover):
    refused(cc(http, realm, prover.proof("GET", endpoint(realm, "token"))), "DPoP HTTP method mismatch")


@pytest.mark.parametrize("htu", ["https://server.example.com/token", "http://testserver/realms/other/protocol/"
                                 "openid-connect/token", "USERINFO"])
def test_htu(http, realm, prover, htu):
    url = endpoint(realm, "userinfo") if htu == "USERINFO" else htu
    refused(cc(http, realm, prover.proof("POST", url)), "DPoP HTTP URL mismatch")


def test_htu_malformed(http, realm, prover):
    refused(cc(http, realm, prover.proof("POST", ":::*;")), "Malformed HTTP URL in DPoP proof")


@pytest.mark.parametrize("variant", [
    "HTTP://TESTSERVER{path}", "http://testserver:80{path}", "http://testserver{path}?x=1#frag",
    "http://testserver{percent}"])
def test_htu_normalised(http, realm, variant):
    path = f"/realms/{realm.name}/protocol/openid-connect/token"
    url = variant.format(path=path, percent=path.replace("token", "%74oken"))
    assert cc(http, realm, Prover().proof("POST", url)).status_code == 200


@pytest.mark.parametrize("offset", [-(dpop.PROOF_LIFETIME + dpop.CLOCK_SKEW + 2), dpop.CLOCK_SKEW + 2, -100000])
def test_iat_outside_the_window(http, realm, prover, offset):
    refused(cc(http, realm, prover.proof("POST", endpoint(realm, "token"), iat=int(time.time()) + offset)),
            "DPoP proof is not active")


@pytest.mark.parametrize("offset", [-(dpop.PROOF_LIFETIME + dpop.CLOCK_SKEW - 2), dpop.CLOCK_SKEW - 2])
def test_iat_inside_the_window(http, realm, prover, offset):
    assert cc(http, realm, prover.proof("POST", endpoint(realm, "token"),
                                        iat=int(time.time()) + offset)).status_code == 200


@pytest.mark.parametrize("missing", ["jti", "htm", "htu", "iat"])
def test_mandatory_claims(http, realm, prover, missing):
    refused(cc(http, realm, prover.proof("POST", endpoint(realm, "token"), claims={missing: None})),
            "DPoP mandatory claims are missing")


def test_jti_replay(http, realm, prover):
    proof = prover.proof("POST", endpoint(realm, "token"))
    assert cc(http, realm, proof).status_code == 200
    refused(cc(http, realm, proof), "DPoP proof has already been used")


def test_a_refused_proof_does_not_use_up_its_jti(http, realm, prover):
    """Only a proof good in every other way is remembered."""
    refused(cc(http, realm, prover.proof("GET", endpoint(realm, "token"), jti="same")), "DPoP HTTP method mismatch")
    assert cc(http, realm, prover.proof("POST", endpoint(realm, "token"), jti="same")).status_code == 200


def test_two_proofs(http, realm, prover):
    proof = prover.proof("POST", endpoint(realm, "token"))
    refused(cc(http, realm, f"{proof}, {proof}"), "Multiple DPoP proofs")


def test_malformed(http, realm):
    refused(cc(http, realm, "not-a-jws"), "DPoP header verification failure")


@pytest.mark.parametrize("kty,alg,params", [("RSA", "PS256", {"size": 2048}), ("RSA", "RS256", {"size": 2048}),
                                            ("EC", "ES384", {"crv": "P-384"}), ("OKP", "EdDSA", {"crv": "Ed25519"})])
def test_algorithms(http, realm, kty, alg, params):
    prover = Prover(kty=kty, alg=alg, **params)
    response = cc(http, realm, prover.proof("POST", endpoint(realm, "token")))
    assert response.status_code == 200, response.json()


def test_discovery_lists_the_algorithms(http, realm):
    document = http.get(f"/realms/{realm.name}/.well-known/openid-configuration").json()
    assert document["dpop_signing_alg_values_supported"] == dpop.ALGORITHMS
    assert "none" not in dpop.ALGORITHMS and not any(a.startswith("HS") for a in dpop.ALGORITHMS)
