"""DPoP-bound tokens from every grant (RFC 9449 §5): ``cnf.jkt`` is the RFC 7638 thumbprint of the
proof's key (computed here by jwcrypto), ``token_type`` DPoP; refresh tokens bound for public
clients only; a bound refresh token refreshed only with its key; Keycloak's per-client
"OAuth 2.0 DPoP Bound Access Tokens Enabled"; server nonces at the token endpoint (§8)."""
import uuid

import pytest

from oidc import dpop, tokens
from realms.models import Event, Realm
from realms.representation import import_realm
from tests.oidc.device import conftest as device
from tests.oidc.endpoints.conftest import (
    SECRET,
    SPA_REDIRECT,
    basic,
    code_for,
    new_verifier,
)

from .conftest import BASE, Prover, endpoint, set_attributes


def issuer(realm):
    return f"{BASE}/realms/{realm.name}"


def post_token(http, realm, data, proof=None, client=("app", SECRET)):
    headers = {"HTTP_AUTHORIZATION": basic(*client)} if client[1] else {}
    if not client[1]:
        data = {**data, "client_id": client[0]}
    if proof is not None:
        headers["HTTP_DPOP"] = proof
    return http.post(endpoint(realm, "token"), data, **headers)


def claims(realm, token):
    return tokens.decode(realm, token, issuer(realm))


def refresh_claims(realm, token, client_id):
    from oidc.grants import refresh_token_claims
    return refresh_token_claims(realm, token, issuer(realm), client_id)


def assert_bound(realm, body, prover):
    assert body["token_type"] == "DPoP"
    assert claims(realm, body["access_token"])["cnf"] == {"jkt": prover.jkt}


def test_client_credentials(http, realm, prover):
    response = post_token(http, realm, {"grant_type": "client_credentials"}, prover.proof("POST", endpoint(realm, "token")))
    assert response.status_code == 200
    assert_bound(realm, response.json(), prover)


def test_without_a_proof_a_bearer_token(http, realm):
    body = post_token(http, realm, {"grant_type": "client_credentials"}).json()
    assert body["token_type"] == "Bearer" and "cnf" not in claims(realm, body["access_token"])


def test_code_grant_public_client_binds_the_refresh_token(http, realm, alice, prover):
    verifier = new_verifier()
    code, _ = code_for(realm, alice, "spa", redirect_uri=SPA_REDIRECT, verifier=verifier)
    response = post_token(http, realm, {"grant_type": "authorization_code", "code": code, "redirect_uri": SPA_REDIRECT,
                                        "code_verifier": verifier}, prover.proof("POST", endpoint(realm, "token")),
                          client=("spa", None))
    assert response.status_code == 200, response.json()
    body = response.json()
    assert_bound(realm, body, prover)
    assert refresh_claims(realm, body["refresh_token"], "spa")["cnf"] == {"jkt": prover.jkt}

    # Refreshing needs a proof of the same key (RFC 9449 §5); Keycloak answers invalid_grant.
    data = {"grant_type": "refresh_token", "refresh_token": body["refresh_token"]}
    missing = post_token(http, realm, data, client=("spa", None))
    assert missing.status_code == 400 and missing.json() == {"error": "invalid_grant",
                                                             "error_description": "DPoP proof is missing"}
    other = post_token(http, realm, data, Prover().proof("POST", endpoint(realm, "token")), client=("spa", None))
    assert other.json() == {"error": "invalid_grant", "error_description": "DPoP confirmation doesn't match DPoP proof"}
    again = post_token(http, realm, data, prover.proof("POST", endpoint(realm, "token")), client=("spa", None))
    assert again.status_code == 200, again.json()
    assert_bound(realm, again.json(), prover)
    assert refresh_claims(realm, again.json()["refresh_token"], "spa")["cnf"] == {"jkt": prover.jkt}


def test_code_grant_confidential_client_leaves_the_refresh_token_unbound(http, realm, alice, prover):
    code, _ = code_for(realm, alice)
    from tests.oidc.endpoints.conftest import REDIRECT
    response = post_token(http, realm, {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT},
                          prover.proof("POST", endpoint(realm, "token")))
    body = response.json()
    assert_bound(realm, body, prover)
    assert "cnf" not in refresh_claims(realm, body["refresh_token"], "app")
    # Bound by its authentication, the client may refresh with a new key (as in Keycloak) or none.
    fresh = Prover()
    data = {"grant_type": "refresh_token", "refresh_token": body["refresh_token"]}
    renewed = post_token(http, realm, data, fresh.proof("POST", endpoint(realm, "token"))).json()
    assert_bound(realm, renewed, fresh)
    plain = post_token(http, realm, {**data, "refresh_token": renewed["refresh_token"]}).json()
    assert plain["token_type"] == "Bearer" and "cnf" not in claims(realm, plain["access_token"])


def test_password_grant(db, http, prover):
    name = "p" + uuid.uuid4().hex[:10]
    realm = import_realm({"realm": name, "enabled": True, "clients": [
        {"clientId": "app", "secret": SECRET, "directAccessGrantsEnabled": True}], "users": [
        {"username": "bob", "enabled": True, "credentials": [{"type": "password", "value": "bob-password-1"}]}],
    }).realm
    response = post_token(http, realm, {"grant_type": "password", "username": "bob", "password": "bob-password-1"},
                          prover.proof("POST", endpoint(realm, "token")))
    assert response.status_code == 200, response.json()
    assert_bound(realm, response.json(), prover)


def test_device_grant(db, client, fresh_caches, prover):
    http = client
    realm = import_realm(device.representation("d" + uuid.uuid4().hex[:10])).realm
    started = device.authorize(http, realm).json()
    assert device.sign_in(http, realm, started["user_code"]).status_code == 302
    response = post_token(http, realm, {"grant_type": device.GRANT, "device_code": started["device_code"]},
                          prover.proof("POST", endpoint(realm, "token")), client=("tv", None))
    assert response.status_code == 200, response.json()
    body = response.json()
    assert_bound(realm, body, prover)
    assert refresh_claims(realm, body["refresh_token"], "tv")["cnf"] == {"jkt": prover.jkt}  # tv is public


# Keycloak's "OAuth 2.0 DPoP Bound Access Tokens Enabled" -------------------------------------------

def test_required_refuses_a_request_without_a_proof(http, realm, prover):
    Realm.objects.filter(pk=realm.pk).update(events_enabled=True)
    set_attributes(realm, "app", **{dpop.REQUIRE_DPOP: "true"})
    response = post_token(http, realm, {"grant_type": "client_credentials"})
    assert response.status_code == 400
    assert response.json() == {"error": "invalid_dpop_proof", "error_description": "DPoP proof is missing"}
    assert Event.objects.filter(realm=realm, type="CLIENT_LOGIN_ERROR", error="invalid_dpop_proof").exists()
    ok = post_token(http, realm, {"grant_type": "client_credentials"}, prover.proof("POST", endpoint(realm, "token")))
    assert_bound(realm, ok.json(), prover)
    set_attributes(realm, "app", **{dpop.REQUIRE_DPOP: "false"})
    assert post_token(http, realm, {"grant_type": "client_credentials"}).json()["token_type"] == "Bearer"


def test_required_refuses_a_refresh_without_a_proof_for_a_confidential_client(http, realm, alice, prover):
    from tests.oidc.endpoints.conftest import REDIRECT
    set_attributes(realm, "app", **{dpop.REQUIRE_DPOP: "true"})
    code, _ = code_for(realm, alice)
    body = post_token(http, realm, {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT},
                      prover.proof("POST", endpoint(realm, "token"))).json()
    response = post_token(http, realm, {"grant_type": "refresh_token", "refresh_token": body["refresh_token"]})
    assert response.json() == {"error": "invalid_dpop_proof", "error_description": "DPoP proof is missing"}


# Server nonces (RFC 9449 §8) ---------------------------------------------------------------------

def test_nonce_required(http, realm, prover):
    set_attributes(realm, "app", **{dpop.REQUIRE_NONCE: "true"})
    first = post_token(http, realm, {"grant_type": "client_credentials"}, prover.proof("POST", endpoint(realm, "token")))
    assert first.status_code == 400
    assert first.json() == {"error": "use_dpop_nonce",
                            "error_description": "Authorization server requires nonce in DPoP proof"}
    nonce = first["DPoP-Nonce"]
    assert nonce
    ok = post_token(http, realm, {"grant_type": "client_credentials"},
                    prover.proof("POST", endpoint(realm, "token"), nonce=nonce))
    assert ok.status_code == 200, ok.json()
    assert_bound(realm, ok.json(), prover)
    assert ok["DPoP-Nonce"]  # a fresh one on success too (§8.2)
    # A client without the setting is not asked for one.
    set_attributes(realm, "app", **{dpop.REQUIRE_NONCE: "false"})
    plain = post_token(http, realm, {"grant_type": "client_credentials"}, prover.proof("POST", endpoint(realm, "token")))
    assert plain.status_code == 200 and "DPoP-Nonce" not in plain


def test_stale_and_foreign_nonces(http, realm, prover, monkeypatch):
    set_attributes(realm, "app", **{dpop.REQUIRE_NONCE: "true"})
    scope = dpop.realm_nonce_scope(realm)
    now = dpop.time.time()
    stale = dpop._nonce_at(scope, int(now) // dpop.NONCE_WINDOW - 2)
    previous = dpop._nonce_at(scope, int(now) // dpop.NONCE_WINDOW - 1)
    foreign = dpop._nonce_at("realm:another", int(now) // dpop.NONCE_WINDOW)
    for bad in (stale, foreign, "garbage"):
        response = post_token(http, realm, {"grant_type": "client_credentials"},
                              prover.proof("POST", endpoint(realm, "token"), nonce=bad))
        assert response.json()["error"] == "use_dpop_nonce" and response["DPoP-Nonce"] == dpop.nonce(scope)
    assert post_token(http, realm, {"grant_type": "client_credentials"},
                      prover.proof("POST", endpoint(realm, "token"), nonce=previous)).status_code == 200


def test_nonces_need_no_storage_and_change_each_window(realm, monkeypatch):
    scope = dpop.realm_nonce_scope(realm)
    monkeypatch.setattr(dpop.time, "time", lambda: 1_000_000.0)
    first = dpop.nonce(scope)
    monkeypatch.setattr(dpop.time, "time", lambda: 1_000_000.0 + dpop.NONCE_WINDOW)
    assert dpop.nonce(scope) != first and dpop._nonce_valid(scope, first)
    monkeypatch.setattr(dpop.time, "time", lambda: 1_000_000.0 + 2 * dpop.NONCE_WINDOW)
    assert not dpop._nonce_valid(scope, first)
