"""Issue 11 findings at the token-side endpoints: public clients cannot introspect, repeated
parameters are refused (RFC 6749 §3.2), a client assertion's lifetime is capped."""
import time
import uuid

import pytest

from oidc import jose
from realms.models import Event

from .conftest import SECRET, SPA_REDIRECT, basic, client_of, code_for, exchange, new_verifier, token_url, url


def test_public_client_cannot_introspect(http, realm, alice):
    realm.events_enabled = True
    realm.save()
    verifier = new_verifier()
    code, _ = code_for(realm, alice, "spa", redirect_uri=SPA_REDIRECT, verifier=verifier)
    body = exchange(http, realm, code, client_id="spa", secret=None, redirect_uri=SPA_REDIRECT,
                    verifier=verifier).json()
    resp = http.post(url(realm, "token/introspect"), {"token": body["access_token"], "client_id": "spa"})
    assert resp.status_code == 403
    assert resp.json() == {"error": "invalid_request", "error_description": "Client not allowed."}
    assert Event.objects.filter(realm=realm, type="INTROSPECT_TOKEN_ERROR", client_id="spa").exists()
    # A confidential client still may.
    ok = http.post(url(realm, "token/introspect"), {"token": body["access_token"]},
                   HTTP_AUTHORIZATION=basic("app", SECRET))
    assert ok.json()["active"] is True


@pytest.mark.parametrize("suffix", ["token", "token/introspect", "revoke"])
def test_duplicated_parameters_are_refused(http, realm, suffix):
    # client_secret_post twice: which copy authenticates is not for the server to guess.
    body = "grant_type=client_credentials&client_id=app&client_secret=%s&client_secret=other&token=x" % SECRET
    resp = http.post(url(realm, suffix), body, content_type="application/x-www-form-urlencoded")
    assert resp.status_code == 400
    assert resp.json() == {"error": "invalid_request", "error_description": "duplicated parameter"}
    twice = "grant_type=client_credentials&grant_type=client_credentials"
    resp = http.post(token_url(realm), twice, content_type="application/x-www-form-urlencoded",
                     HTTP_AUTHORIZATION=basic("app", SECRET))
    assert resp.status_code == 400 and resp.json()["error_description"] == "duplicated parameter"


def test_single_parameters_still_work(http, realm):
    resp = http.post(token_url(realm), {"grant_type": "client_credentials"}, HTTP_AUTHORIZATION=basic("app", SECRET))
    assert resp.status_code == 200, resp.content


def _assert_with(realm, key, **claims):
    base = {"iss": "app", "sub": "app", "aud": f"http://testserver/realms/{realm.name}/protocol/openid-connect/token",
            "jti": str(uuid.uuid4())}
    token = jose.sign({**base, **claims}, alg="ES256", key=key, kid="k1")
    return {"grant_type": "client_credentials", "client_assertion": token,
            "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"}


def test_client_assertion_lifetime_is_capped(http, realm, key_client):
    now = int(time.time())
    ten_years = 10 * 365 * 86400
    # Without iat, exp ten years ahead is refused.
    resp = http.post(token_url(realm), _assert_with(realm, key_client, exp=now + ten_years))
    assert resp.status_code == 401 and resp.json()["error"] == "invalid_client"
    # With iat, it is usable for the max lifetime after iat only.
    resp = http.post(token_url(realm), _assert_with(realm, key_client, iat=now - 120, exp=now + ten_years))
    assert resp.status_code == 401
    assert http.post(token_url(realm), _assert_with(realm, key_client, iat=now, exp=now + ten_years)).status_code == 200
    assert http.post(token_url(realm), _assert_with(realm, key_client, exp=now + 50)).status_code == 200
    # The client's own limit (Keycloak's attribute) widens it.
    app = client_of(realm, "app")
    app.attributes = {**app.attributes, "token.endpoint.auth.signing.max.exp": "600"}
    app.save()
    assert http.post(token_url(realm), _assert_with(realm, key_client, exp=now + 500)).status_code == 200


def _authorize(http, realm):
    from .conftest import REDIRECT
    return http.get(url(realm, "auth"), {"client_id": "app", "redirect_uri": REDIRECT, "response_type": "code",
                                         "scope": "openid", "state": "s"})


def test_client_chosen_auth_session_id_is_replaced(http, realm):
    http.cookies["AUTH_SESSION_ID"] = "attacker-chosen-id"
    page = _authorize(http, realm)
    assert page.status_code == 200
    issued = page.cookies["AUTH_SESSION_ID"].value
    assert issued != "attacker-chosen-id"
    # The id this server issued is kept for the next sign-in of the same browser.
    again = _authorize(http, realm)
    assert again.status_code == 200 and "AUTH_SESSION_ID" not in again.cookies
