"""Refresh tokens: spec 1 §3 (refresh token and SSO session rows) and §7 (invalid_grant)."""
from datetime import timedelta

from django.utils import timezone

from oidc.tokens import decode
from realms.models import UserSession
from realms.sso import sessions

from .conftest import SPA_REDIRECT, code_for, exchange, new_verifier, refresh


def tokens_for(http, realm, user, **kw):
    code, user_session = code_for(realm, user, **kw)
    resp = exchange(http, realm, code)
    assert resp.status_code == 200, resp.content
    return resp.json(), user_session


def test_refresh_rotates_and_resets_idle_timer(http, realm, alice):
    body, user_session = tokens_for(http, realm, alice)
    UserSession.objects.filter(pk=user_session.pk).update(last_refresh=timezone.now() - timedelta(minutes=10))
    sessions._cache_drop(user_session.pk)
    resp = refresh(http, realm, body["refresh_token"])
    assert resp.status_code == 200, resp.content
    new = resp.json()
    assert new["refresh_token"] != body["refresh_token"] and new["access_token"] != body["access_token"]
    assert "id_token" in new
    assert timezone.now() - UserSession.objects.get(pk=user_session.pk).last_refresh < timedelta(seconds=5)
    # Revoke Refresh Token off: the old refresh token keeps working.
    assert refresh(http, realm, body["refresh_token"]).status_code == 200


def test_refresh_after_user_disabled_is_invalid_grant(http, realm, alice):
    body, _ = tokens_for(http, realm, alice)
    alice.enabled = False
    alice.save()
    resp = refresh(http, realm, body["refresh_token"])
    assert resp.status_code == 400 and resp.json()["error"] == "invalid_grant"


def test_refresh_after_session_end_is_invalid_grant(http, realm, alice):
    body, user_session = tokens_for(http, realm, alice)
    sessions.end_session(user_session)
    resp = refresh(http, realm, body["refresh_token"])
    assert resp.status_code == 400 and resp.json()["error"] == "invalid_grant"


def test_refresh_after_idle_timeout_is_invalid_grant(http, realm, alice):
    body, user_session = tokens_for(http, realm, alice)
    UserSession.objects.filter(pk=user_session.pk).update(
        last_refresh=timezone.now() - timedelta(seconds=realm.sso_session_idle_timeout + 1))
    sessions._cache_drop(user_session.pk)
    resp = refresh(http, realm, body["refresh_token"])
    assert resp.status_code == 400 and resp.json()["error"] == "invalid_grant"


def test_refresh_expiry_is_idle_timeout(http, realm, alice):
    body, _ = tokens_for(http, realm, alice)
    assert abs(body["refresh_expires_in"] - realm.sso_session_idle_timeout) <= 2
    claims = decode(realm, body["refresh_token"], f"http://testserver/realms/{realm.name}")
    assert claims["typ"] == "Refresh"


def test_refresh_token_of_another_client_is_refused(http, realm, alice):
    verifier = new_verifier()
    code, _ = code_for(realm, alice, "spa", redirect_uri=SPA_REDIRECT, verifier=verifier)
    body = exchange(http, realm, code, client_id="spa", secret=None, redirect_uri=SPA_REDIRECT,
                    verifier=verifier).json()
    resp = refresh(http, realm, body["refresh_token"])  # presented by "app"
    assert resp.status_code == 400 and resp.json()["error"] == "invalid_grant"


def test_tampered_refresh_token_is_refused(http, realm, alice):
    body, _ = tokens_for(http, realm, alice)
    head, payload, sig = body["refresh_token"].split(".")
    forged = f"{head}.{payload}.{sig[:-4]}AAAA"
    assert refresh(http, realm, forged).json()["error"] == "invalid_grant"


def test_revoke_refresh_token_single_use_and_reuse_ends_session(http, realm, alice):
    realm.revoke_refresh_token = True
    realm.save()
    body, user_session = tokens_for(http, realm, alice)
    first = refresh(http, realm, body["refresh_token"])
    assert first.status_code == 200
    second = refresh(http, realm, first.json()["refresh_token"])
    assert second.status_code == 200
    reuse = refresh(http, realm, body["refresh_token"])
    assert reuse.status_code == 400 and reuse.json()["error"] == "invalid_grant"
    # Reuse means a second holder: the whole session ends, the newest token dies too.
    assert not UserSession.objects.filter(pk=user_session.pk).exists()
    assert refresh(http, realm, second.json()["refresh_token"]).status_code == 400


def test_refresh_token_max_reuse(http, realm, alice):
    realm.revoke_refresh_token = True
    realm.refresh_token_max_reuse = 1
    realm.save()
    body, _ = tokens_for(http, realm, alice)
    assert refresh(http, realm, body["refresh_token"]).status_code == 200
    assert refresh(http, realm, body["refresh_token"]).status_code == 200  # one reuse allowed
    assert refresh(http, realm, body["refresh_token"]).status_code == 400


def test_refresh_can_narrow_but_not_widen_scope(http, realm, alice):
    body, _ = tokens_for(http, realm, alice, scope="openid address")
    narrow = refresh(http, realm, body["refresh_token"], scope="openid")
    assert narrow.status_code == 200 and "address" not in narrow.json()["scope"].split()
    wide = refresh(http, realm, body["refresh_token"], scope="openid phone")
    assert wide.status_code == 400 and wide.json()["error"] == "invalid_scope"


def test_offline_token_outlives_the_sso_session(http, realm, alice):
    body, user_session = tokens_for(http, realm, alice, scope="openid offline_access")
    claims = decode(realm, body["refresh_token"], f"http://testserver/realms/{realm.name}")
    assert claims["typ"] == "Offline"
    offline = UserSession.objects.get(pk=claims["sid"])
    assert offline.offline and offline.pk != user_session.pk
    sessions.end_session(user_session)  # logout of the browser session
    resp = refresh(http, realm, body["refresh_token"])
    assert resp.status_code == 200, resp.content
    # 30 days without use: expired.
    UserSession.objects.filter(pk=offline.pk).update(
        last_refresh=timezone.now() - timedelta(seconds=realm.offline_session_idle_timeout + 1))
    sessions._cache_drop(offline.pk)
    assert refresh(http, realm, resp.json()["refresh_token"]).json()["error"] == "invalid_grant"


def test_offline_token_requires_offline_access_role(http, realm, alice):
    alice.roles.clear()
    code, _ = code_for(realm, alice, scope="openid offline_access")
    resp = exchange(http, realm, code)
    assert resp.status_code == 400 and resp.json()["error"] == "invalid_scope"
