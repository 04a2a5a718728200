"""The identity provider's JWKS, served by a real HTTP server on loopback: fetched through
realms.http.outbound, cached, fetched again once for a kid it does not know (a key rotation)."""
from oidc import client_auth

from .conftest import claims_for, grant, new_key, sign


def test_jwks_fetched_once_then_cached(http, realm, idp_key, jwks_server):
    for _ in range(3):
        assert grant(http, realm, sign(claims_for(realm), idp_key)).status_code == 200
    assert jwks_server.hits == 1


def test_rotated_key_refetched_once(http, realm, idp_key, jwks_server, monkeypatch):
    assert grant(http, realm, sign(claims_for(realm), idp_key)).status_code == 200
    rotated = new_key()
    jwks_server.keys = [rotated]
    # The refetch floor (a flood of made-up kids must not hammer the provider) is set to 0 here so
    # the rotation right after the first fetch is seen; the next test shows the floor itself.
    monkeypatch.setattr(client_auth, "JWKS_REFETCH_MIN_INTERVAL", 0)
    assert grant(http, realm, sign(claims_for(realm), rotated)).status_code == 200
    assert jwks_server.hits == 2
    # The old key has left the JWKS: its assertions no longer verify.
    resp = grant(http, realm, sign(claims_for(realm), idp_key))
    assert resp.json()["error_description"] == "Invalid signature"


def test_unknown_kids_do_not_refetch_within_the_floor(http, realm, idp_key, jwks_server):
    assert grant(http, realm, sign(claims_for(realm), idp_key)).status_code == 200
    for _ in range(3):
        resp = grant(http, realm, sign(claims_for(realm), new_key()))
        assert resp.json()["error_description"] == "Invalid signature"
    assert jwks_server.hits == 1


def test_unreachable_jwks_is_invalid_signature(http, realm, idp_key, jwks_server):
    jwks_server.close()
    resp = grant(http, realm, sign(claims_for(realm), idp_key))
    assert resp.status_code == 400 and resp.json()["error_description"] == "Invalid signature"


def test_jwks_url_outside_the_allowed_networks_is_not_called(http, realm, idp_key, jwks_server, settings):
    settings.IDP_OUTBOUND_ALLOWED_NETWORKS = []  # production: loopback is refused (SSRF)
    resp = grant(http, realm, sign(claims_for(realm), idp_key))
    assert resp.json()["error_description"] == "Invalid signature"
    assert jwks_server.hits == 0
