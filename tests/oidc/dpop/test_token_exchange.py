"""A standard token exchange (RFC 8693) with a DPoP proof binds the exchanged token like any grant;
the subject token itself is read, not presented, so it needs no proof of its own."""
from oidc import tokens
from tests.oidc.token_exchange.conftest import (  # noqa: F401 (fixtures)
    ACCESS,
    GRANT,
    basic,
    http,
    password_token,
    realm,
    token_url,
)

from .conftest import BASE, Prover


def test_exchange_with_a_proof_is_bound(http, realm):  # noqa: F811
    prover = Prover()
    subject = password_token(http, realm)["access_token"]
    url = BASE + token_url(realm)
    answer = http.post(url, {"grant_type": GRANT, "subject_token": subject, "subject_token_type": ACCESS,
                             "audience": "target"},
                       HTTP_AUTHORIZATION=basic("requester"), HTTP_DPOP=prover.proof("POST", url))
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["token_type"] == "DPoP"
    claims = tokens.decode(realm, body["access_token"], f"{BASE}/realms/{realm.name}")
    assert claims["cnf"] == {"jkt": prover.jkt} and claims["aud"] == "target"
