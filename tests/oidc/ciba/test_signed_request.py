"""The signed authentication request (CIBA Core §7.1.1, the ``request`` parameter): signed with
the algorithm of the client's ``ciba.backchannel.auth.request.signing.alg``, verified with the
client's JWKS, its claims in place of the form's parameters; Keycloak's refusals."""
import time

import pytest
from jwcrypto import jwk

from oidc import jose
from tests.oidc.ciba.conftest import set_client_attributes, start

MISMATCH = ("Client requested algorithm not registered in advance or request signed with different algorithm "
            "other than client requested algorithm")


def error(response):
    return response.status_code, response.json()["error"], response.json().get("error_description")


@pytest.fixture
def key(realm):
    key = jwk.JWK.generate(kty="RSA", size=2048, kid="ciba-k1")
    set_client_attributes(realm, "ciba-app", **{"jwks.string": '{"keys": [%s]}' % key.export_public(),
                                                "ciba.backchannel.auth.request.signing.alg": "PS256"})
    return key


def signed(key, alg="PS256", **claims):
    now = int(time.time())
    body = {"iss": "ciba-app", "aud": "issuer", "iat": now, "exp": now + 60, "jti": str(now),
            "scope": "openid", "login_hint": "alice", **claims}
    return jose.sign(body, alg=alg, key=key, kid="ciba-k1")


def test_signed_request_is_read(http, realm, channel, key):
    response = start(http, realm, scope=None, login_hint="nobody",
                     request=signed(key, binding_message="SIGNED-1", requested_expiry=30))
    assert response.status_code == 200, response.content
    assert response.json()["expires_in"] == 30
    # The claims, not the form, name the user and carry the binding message.
    assert channel.last["json"]["login_hint"] == "alice"
    assert channel.last["json"]["binding_message"] == "SIGNED-1"


def test_signed_request_claims_are_checked_as_parameters(http, realm, channel, key):
    assert error(start(http, realm, request=signed(key, binding_message="two words")))[1] == "invalid_binding_message"
    assert error(start(http, realm, request=signed(key, login_hint="nobody"))) == (400, "invalid_request", "invalid user")


def test_signed_request_refusals(http, realm, channel, key):
    other = jwk.JWK.generate(kty="RSA", size=2048, kid="ciba-k1")
    assert error(start(http, realm, request=signed(other))) == (400, "invalid_request", "Failed to verify signature")
    assert error(start(http, realm, request=signed(key, alg="RS256"))) == (400, "invalid_request", MISMATCH)
    hs = jose.sign({"login_hint": "alice"}, alg="HS256", key=b"s" * 32)
    assert error(start(http, realm, request=hs)) == (400, "invalid_request", "Signed algorithm is not allowed")
    unsigned = jose.b64e(b'{"alg":"none"}') + "." + jose.b64e(b'{"login_hint":"alice"}') + "."
    assert error(start(http, realm, request=unsigned)) == (400, "invalid_request", "None signed algorithm is not allowed")
    assert error(start(http, realm, request="a.b.c.d.e")) == (400, "invalid_request", "Encrypted request object is not allowed")
    assert error(start(http, realm, request=signed(key, exp=int(time.time()) - 60))) == (
        400, "invalid_request", "Request Expired")
    assert error(start(http, realm, request=signed(key), request_uri="https://app.example/r")) == (
        400, "invalid_request", "Illegal to use both 'request' and 'request_uri' parameters together")
    assert channel.requests == []


def test_signed_request_needs_the_client_attribute(http, realm, channel, key):
    set_client_attributes(realm, "ciba-app", **{"ciba.backchannel.auth.request.signing.alg": ""})
    assert error(start(http, realm, request=signed(key))) == (400, "invalid_request", MISMATCH)
