"""The cost model (docs/cost-model.md) of a DPoP-bound client-credentials grant (RFC 9449), once
the realm's configuration is cached, held exactly."""
from tests.conftest import assert_costs
from tests.oidc.endpoints.conftest import SECRET, basic

from .conftest import endpoint

# (queries, shared-cache calls) per request, with what they are. Keep docs/cost-model.md in step.
EXPECTED = {
    "dpop_client_credentials": (0, 1),  # the proof's jti marked used (SET NX)
}


def _grant(http, realm, prover):
    token = endpoint(realm, "token")
    return http.post(token, {"grant_type": "client_credentials"}, HTTP_AUTHORIZATION=basic("app", SECRET),
                     HTTP_DPOP=prover.proof("POST", token))


def test_queries_and_cache_calls_per_request_type(http, realm, prover, measure, fresh_caches):
    assert _grant(http, realm, prover).status_code == 200  # the realm's configuration cached
    found = {}
    with measure() as found["dpop_client_credentials"]:
        response = _grant(http, realm, prover)
    assert response.status_code == 200 and response.json()["token_type"] == "DPoP", response.content
    assert_costs(found, EXPECTED)
