"""Authorization code exchange: spec 1 §3 (code states) and §7 (errors), PKCE (RFC 7636)."""
from datetime import timedelta

from django.utils import timezone

from oidc.models import AuthorizationCode
from oidc.tokens import decode
from realms.models import ClientSession, Event

from .conftest import SPA_REDIRECT, client_of, code_for, exchange, new_verifier, refresh


def issuer(realm):
    return f"http://testserver/realms/{realm.name}"


def test_code_exchange_returns_tokens(http, realm, alice):
    code, user_session = code_for(realm, alice)
    resp = exchange(http, realm, code)
    assert resp.status_code == 200, resp.content
    body = resp.json()
    assert body["token_type"] == "Bearer" and body["session_state"] == user_session.pk
    assert resp["Cache-Control"] == "no-store"
    at = decode(realm, body["access_token"], issuer(realm))
    assert at["sub"] == alice.pk and at["azp"] == "app" and at["sid"] == user_session.pk
    assert at["typ"] == "Bearer"
    assert "openid" in at["scope"].split()
    idt = decode(realm, body["id_token"], issuer(realm))
    assert idt["aud"] == "app" and idt["nonce"] == "n-1" and idt["typ"] == "ID" and idt["at_hash"]
    assert idt["auth_time"] == int(user_session.auth_time.timestamp())
    rt = decode(realm, body["refresh_token"], issuer(realm))
    assert rt["typ"] == "Refresh" and rt["sid"] == user_session.pk


def test_code_works_once_and_reuse_revokes_its_tokens(http, realm, alice):
    code, user_session = code_for(realm, alice)
    first = exchange(http, realm, code)
    assert first.status_code == 200
    second = exchange(http, realm, code)
    assert second.status_code == 400 and second.json()["error"] == "invalid_grant"
    # RFC 6749 §4.1.2: the client session the code started is gone, so its refresh token is dead.
    assert not ClientSession.objects.filter(user_session=user_session, client__client_id="app").exists()
    again = refresh(http, realm, first.json()["refresh_token"])
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"


def test_expired_code_is_rejected(http, realm, alice):
    code, _ = code_for(realm, alice)
    AuthorizationCode.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    resp = exchange(http, realm, code)
    assert resp.status_code == 400 and resp.json()["error"] == "invalid_grant"


def test_code_lifetime_is_client_login_timeout(realm, alice):
    code_for(realm, alice)
    row = AuthorizationCode.objects.get()
    assert abs((row.expires_at - row.created).total_seconds() - realm.access_code_lifespan) < 2


def test_code_of_another_client_is_rejected_and_burned(http, realm, alice):
    code, _ = code_for(realm, alice, "spa", redirect_uri=SPA_REDIRECT, verifier=new_verifier())
    resp = exchange(http, realm, code, redirect_uri=SPA_REDIRECT)  # presented by "app"
    assert resp.status_code == 400 and resp.json()["error"] == "invalid_grant"
    assert AuthorizationCode.objects.get().used


def test_wrong_redirect_uri_is_rejected(http, realm, alice):
    code, _ = code_for(realm, alice)
    resp = exchange(http, realm, code, redirect_uri="https://app.example/other")
    assert resp.status_code == 400 and resp.json()["error"] == "invalid_grant"


def test_pkce_s256_good_verifier(http, realm, alice):
    verifier = new_verifier()
    code, _ = code_for(realm, alice, "spa", redirect_uri=SPA_REDIRECT, verifier=verifier)
    resp = exchange(http, realm, code, client_id="spa", secret=None, redirect_uri=SPA_REDIRECT, verifier=verifier)
    assert resp.status_code == 200, resp.content


def test_pkce_wrong_verifier_is_invalid_grant(http, realm, alice):
    code, _ = code_for(realm, alice, "spa", redirect_uri=SPA_REDIRECT, verifier=new_verifier())
    resp = exchange(http, realm, code, client_id="spa", secret=None, redirect_uri=SPA_REDIRECT,
                    verifier=new_verifier())
    assert resp.status_code == 400 and resp.json()["error"] == "invalid_grant"


def test_pkce_missing_verifier_is_invalid_grant(http, realm, alice):
    code, _ = code_for(realm, alice, "spa", redirect_uri=SPA_REDIRECT, verifier=new_verifier())
    resp = exchange(http, realm, code, client_id="spa", secret=None, redirect_uri=SPA_REDIRECT)
    assert resp.status_code == 400 and resp.json()["error"] == "invalid_grant"


def test_verifier_without_stored_challenge_is_a_downgrade(http, realm, alice):
    code, _ = code_for(realm, alice)  # no challenge in the authorization request
    resp = exchange(http, realm, code, verifier=new_verifier())
    assert resp.status_code == 400 and resp.json()["error"] == "invalid_grant"
    assert "challenge not present" in resp.json()["error_description"]


def test_plain_refused_when_client_requires_s256(http, realm, alice):
    verifier = new_verifier()
    code, _ = code_for(realm, alice, "spa", redirect_uri=SPA_REDIRECT, verifier=verifier, method="plain")
    resp = exchange(http, realm, code, client_id="spa", secret=None, redirect_uri=SPA_REDIRECT, verifier=verifier)
    assert resp.status_code == 400 and resp.json()["error"] == "invalid_grant"


def test_plain_allowed_when_client_does_not_require_s256(http, realm, alice):
    verifier = new_verifier()
    code, _ = code_for(realm, alice, verifier=verifier, method="plain")
    assert exchange(http, realm, code, verifier=verifier).status_code == 200


def test_verifier_length_and_charset(http, realm, alice):
    short = "a" * 42
    code, _ = code_for(realm, alice, verifier=short, method="plain")
    assert exchange(http, realm, code, verifier=short).json()["error"] == "invalid_grant"
    bad = "a" * 42 + "!"
    code, _ = code_for(realm, alice, verifier=bad, method="plain")
    assert exchange(http, realm, code, verifier=bad).json()["error"] == "invalid_grant"


def test_code_of_ended_session_is_rejected(http, realm, alice):
    from realms.sso import sessions

    code, user_session = code_for(realm, alice)
    sessions.end_session(user_session)
    resp = exchange(http, realm, code)
    assert resp.status_code == 400 and resp.json()["error"] == "invalid_grant"


def test_events_code_to_token_and_error(http, realm, alice):
    realm.events_enabled = True
    realm.save()
    code, _ = code_for(realm, alice)
    exchange(http, realm, code)
    exchange(http, realm, code)
    types = list(Event.objects.filter(realm=realm).order_by("time").values_list("type", "error"))
    assert types == [("CODE_TO_TOKEN", ""), ("CODE_TO_TOKEN_ERROR", "invalid_code")]


def test_standard_flow_disabled_client_is_unauthorized(http, realm, alice):
    code, _ = code_for(realm, alice)
    app = client_of(realm, "app")
    app.standard_flow_enabled = False
    app.save()
    resp = exchange(http, realm, code)
    assert resp.status_code == 400 and resp.json()["error"] == "unauthorized_client"
