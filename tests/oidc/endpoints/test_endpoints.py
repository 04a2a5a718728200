"""Discovery, JWKS and key rotation, userinfo, introspection (RFC 7662), revocation (RFC 7009), CORS."""
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from django.utils import timezone

from oidc.tokens import decode
from realms.data.keys import rotate_key
from realms.models import ClientSession, Event
from realms.sso import sessions

from .conftest import REDIRECT, SECRET, basic, code_for, exchange, refresh, url


def issuer(realm):
    return f"http://testserver/realms/{realm.name}"


def signed_tokens(http, realm, user, scope="openid"):
    code, user_session = code_for(realm, user, scope=scope)
    resp = exchange(http, realm, code)
    assert resp.status_code == 200, resp.content
    return resp.json(), user_session


def test_discovery_document(http, realm):
    doc = http.get(f"/realms/{realm.name}/.well-known/openid-configuration").json()
    assert doc["issuer"] == issuer(realm)
    assert doc["token_endpoint"] == issuer(realm) + "/protocol/openid-connect/token"
    assert doc["jwks_uri"].endswith("/protocol/openid-connect/certs")
    assert "S256" in doc["code_challenge_methods_supported"]
    assert {"authorization_code", "refresh_token", "client_credentials"} <= set(doc["grant_types_supported"])
    assert "private_key_jwt" in doc["token_endpoint_auth_methods_supported"]
    assert {"openid", "profile", "email", "offline_access"} <= set(doc["scopes_supported"])


def test_advertised_response_modes_work_and_carry_iss(http, realm):
    doc = http.get(f"/realms/{realm.name}/.well-known/openid-configuration").json()
    assert doc["response_modes_supported"] == [
        "query", "fragment", "form_post", "query.jwt", "fragment.jwt", "form_post.jwt", "jwt"]
    assert doc["authorization_response_iss_parameter_supported"] is True
    request = {"client_id": "app", "redirect_uri": REDIRECT, "response_type": "code", "scope": "openid",
               "state": "s-1", "prompt": "none"}  # no session: answered at once with login_required
    query = http.get(doc["authorization_endpoint"], {**request, "response_mode": "query"})
    assert query.status_code == 302 and query["Location"].startswith(REDIRECT + "?")
    assert parse_qs(urlsplit(query["Location"]).query) == {
        "error": ["login_required"], "state": ["s-1"], "iss": [issuer(realm)]}
    posted = http.get(doc["authorization_endpoint"], {**request, "response_mode": "form_post"}).content.decode()
    assert f'action="{REDIRECT}"' in posted and 'name="error" value="login_required"' in posted
    assert f'name="iss" value="{issuer(realm)}"' in posted and 'name="state" value="s-1"' in posted
    fragment = http.get(doc["authorization_endpoint"], {**request, "response_mode": "fragment"})
    assert fragment["Location"].startswith(REDIRECT + "#") and parse_qs(urlsplit(fragment["Location"]).fragment) == {
        "error": ["login_required"], "state": ["s-1"], "iss": [issuer(realm)]}


def test_key_rotation_old_tokens_verify_new_tokens_use_new_kid(http, realm, alice):
    from oidc import jose

    old, _ = signed_tokens(http, realm, alice)
    old_kid = jose.parse(old["access_token"])[0]["kid"]
    new_key = rotate_key(realm)
    jwks = http.get(url(realm, "certs")).json()
    kids = {k["kid"] for k in jwks["keys"]}
    assert {old_kid, new_key.kid} <= kids and all("d" not in k for k in jwks["keys"])
    new, _ = signed_tokens(http, realm, alice)
    assert jose.parse(new["access_token"])[0]["kid"] == new_key.kid
    decode(realm, old["access_token"], issuer(realm))  # passive key still verifies
    introspected = http.post(url(realm, "token/introspect"), {"token": old["access_token"]},
                             HTTP_AUTHORIZATION=basic("app", SECRET)).json()
    assert introspected["active"] is True


def test_userinfo_get_and_post(http, realm, alice):
    body, _ = signed_tokens(http, realm, alice)
    auth = {"HTTP_AUTHORIZATION": "Bearer " + body["access_token"]}
    got = http.get(url(realm, "userinfo"), **auth)
    assert got.status_code == 200 and got.json()["sub"] == alice.pk
    assert got.json()["email"] == "alice@example.org" and got.json()["preferred_username"] == "alice"
    posted = http.post(url(realm, "userinfo"), {"access_token": body["access_token"]})
    assert posted.status_code == 200 and posted.json() == got.json()


def test_userinfo_refuses_bad_tokens(http, realm, alice):
    body, user_session = signed_tokens(http, realm, alice)
    missing = http.get(url(realm, "userinfo"))
    assert missing.status_code == 401 and 'error="invalid_token"' in missing["WWW-Authenticate"]
    refresh_as_bearer = http.get(url(realm, "userinfo"), HTTP_AUTHORIZATION="Bearer " + body["refresh_token"])
    assert refresh_as_bearer.status_code == 401
    sessions.end_session(user_session)
    ended = http.get(url(realm, "userinfo"), HTTP_AUTHORIZATION="Bearer " + body["access_token"])
    assert ended.status_code == 401


def introspect(http, realm, token, client=("app", SECRET)):
    return http.post(url(realm, "token/introspect"), {"token": token}, HTTP_AUTHORIZATION=basic(*client))


def test_introspection_active_and_sees_disabled_user_at_once(http, realm, alice):
    realm.events_enabled = True
    realm.save()
    body, _ = signed_tokens(http, realm, alice)
    resp = introspect(http, realm, body["access_token"], ("api", "api-secret-" + "y" * 20))
    data = resp.json()
    assert data["active"] is True and data["sub"] == alice.pk and data["client_id"] == "app"
    assert data["username"] == "alice" and data["token_type"] == "Bearer"
    assert introspect(http, realm, body["refresh_token"]).json()["active"] is True
    alice.enabled = False
    alice.save()
    assert introspect(http, realm, body["access_token"]).json() == {"active": False}
    assert Event.objects.filter(realm=realm, type="INTROSPECT_TOKEN").exists()


def test_introspection_inactive_cases(http, realm, alice):
    body, user_session = signed_tokens(http, realm, alice)
    assert introspect(http, realm, "garbage").json() == {"active": False}
    head, payload, sig = body["access_token"].split(".")
    assert introspect(http, realm, f"{head}.{payload}.{sig[::-1]}").json() == {"active": False}
    sessions.end_session(user_session)
    assert introspect(http, realm, body["access_token"]).json() == {"active": False}


def test_introspection_requires_client_authentication(http, realm, alice):
    body, _ = signed_tokens(http, realm, alice)
    resp = http.post(url(realm, "token/introspect"), {"token": body["access_token"]})
    assert resp.status_code == 401 and resp.json()["error"] == "invalid_client"
    resp = introspect(http, realm, body["access_token"], ("app", "wrong"))
    assert resp.status_code == 401


def test_revoke_refresh_token_ends_client_session(http, realm, alice):
    realm.events_enabled = True
    realm.save()
    body, user_session = signed_tokens(http, realm, alice)
    resp = http.post(url(realm, "revoke"), {"token": body["refresh_token"], "token_type_hint": "refresh_token"},
                     HTTP_AUTHORIZATION=basic("app", SECRET))
    assert resp.status_code == 200
    assert not ClientSession.objects.filter(user_session=user_session, client__client_id="app").exists()
    assert refresh(http, realm, body["refresh_token"]).json()["error"] == "invalid_grant"
    assert introspect(http, realm, body["access_token"]).json() == {"active": False}
    assert Event.objects.filter(realm=realm, type="REVOKE_GRANT").exists()


def test_revoke_access_token_and_unknown_token(http, realm, alice):
    body, _ = signed_tokens(http, realm, alice)
    auth = {"HTTP_AUTHORIZATION": basic("app", SECRET)}
    assert http.post(url(realm, "revoke"), {"token": body["access_token"]}, **auth).status_code == 200
    assert introspect(http, realm, body["access_token"]).json() == {"active": False}
    assert http.post(url(realm, "revoke"), {"token": "not-a-token"}, **auth).status_code == 200


def test_a_revoked_access_token_stays_revoked_when_the_cache_loses_its_mark(http, realm, alice):
    """The shared cache restarted empty (a Redis without persistence): the marks come back from the
    database (RevokedToken) at the next read, in the same round trip's miss, and only once."""
    from django.core.cache import cache

    from oidc.models import RevokedToken
    from realms.purges import run as purge

    body, _ = signed_tokens(http, realm, alice)
    other, _ = signed_tokens(http, realm, alice)
    auth = {"HTTP_AUTHORIZATION": basic("app", SECRET)}
    assert http.post(url(realm, "revoke"), {"token": body["access_token"]}, **auth).status_code == 200
    assert RevokedToken.objects.count() == 1
    cache.clear()
    assert introspect(http, realm, body["access_token"]).json() == {"active": False}
    assert introspect(http, realm, other["access_token"]).json()["active"] is True
    cache.clear()
    userinfo = http.get(url(realm, "userinfo"), HTTP_AUTHORIZATION=f"Bearer {body['access_token']}")
    assert userinfo.status_code == 401
    assert http.get(url(realm, "userinfo"), HTTP_AUTHORIZATION=f"Bearer {other['access_token']}").status_code == 200
    # Past the token's expiry the row is purged with the other expired state.
    RevokedToken.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    purge()
    assert not RevokedToken.objects.exists()


def test_revoke_offline_token_ends_offline_session(http, realm, alice):
    from realms.models import UserSession

    body, _ = signed_tokens(http, realm, alice, scope="openid offline_access")
    sid = decode(realm, body["refresh_token"], issuer(realm))["sid"]
    http.post(url(realm, "revoke"), {"token": body["refresh_token"]}, HTTP_AUTHORIZATION=basic("app", SECRET))
    assert not UserSession.objects.filter(pk=sid).exists()


def test_revoke_token_of_another_client_is_refused(http, realm, alice):
    from .conftest import SPA_REDIRECT, new_verifier

    verifier = new_verifier()
    code, _ = code_for(realm, alice, "spa", redirect_uri=SPA_REDIRECT, verifier=verifier)
    body = exchange(http, realm, code, client_id="spa", secret=None, redirect_uri=SPA_REDIRECT,
                    verifier=verifier).json()
    resp = http.post(url(realm, "revoke"), {"token": body["refresh_token"]}, HTTP_AUTHORIZATION=basic("app", SECRET))
    assert resp.status_code == 400


def test_cors_for_registered_origins_only(http, realm, alice):
    code, _ = code_for(realm, alice)
    allowed = exchange(http, realm, code, HTTP_ORIGIN="https://app.example")
    assert allowed["Access-Control-Allow-Origin"] == "https://app.example"  # "+" = redirect URI origins
    code, _ = code_for(realm, alice)
    other = exchange(http, realm, code, HTTP_ORIGIN="https://evil.example")
    assert other.status_code == 200 and "Access-Control-Allow-Origin" not in other
    pre = http.options(url(realm, "token"), HTTP_ORIGIN="https://app.example",
                       HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST")
    assert pre.status_code == 200 and "POST" in pre["Access-Control-Allow-Methods"]
    certs = http.get(url(realm, "certs"), HTTP_ORIGIN="https://anywhere.example")
    assert certs["Access-Control-Allow-Origin"] == "https://anywhere.example"
    body = exchange(http, realm, code_for(realm, alice)[0]).json()
    info = http.get(url(realm, "userinfo"), HTTP_AUTHORIZATION="Bearer " + body["access_token"],
                    HTTP_ORIGIN="https://app.example")
    assert info["Access-Control-Allow-Origin"] == "https://app.example"
    assert REDIRECT.startswith("https://app.example")


def test_protocol_endpoints_take_the_short_middleware_path(http, realm):
    token = http.post(url(realm, "token"), {"grant_type": "client_credentials"},
                      HTTP_AUTHORIZATION=basic("app", SECRET))
    assert token.status_code == 200 and token["Content-Length"] == str(len(token.content))
    assert token["X-Content-Type-Options"] == "nosniff"  # the security middleware still runs
    assert not token.has_header("X-Frame-Options") and not token.cookies  # no session, CSRF, framing work
    page = http.get(url(realm, "auth"), {"client_id": "app", "redirect_uri": REDIRECT, "response_type": "code"})
    assert page["X-Frame-Options"] == "SAMEORIGIN"  # sign-in pages: the realm's browserSecurityHeaders
    assert page.cookies["csrftoken"]  # and the whole stack
    assert http.post("/realms/nowhere/protocol/openid-connect/token", {}).status_code == 404


@pytest.mark.parametrize("endpoint", ["token", "certs", "userinfo", "token/introspect", "revoke", "discovery"])
def test_protocol_endpoints_refuse_a_host_not_allowed(http, realm, settings, endpoint):
    # As production: a configured base URL (so no view reads the Host) and a short ALLOWED_HOSTS.
    settings.IDP_BASE_URL = "https://id.example.org"
    settings.ALLOWED_HOSTS = ["id.example.org", "localhost", "127.0.0.1"]
    path = (f"/realms/{realm.name}/.well-known/openid-configuration" if endpoint == "discovery"
            else url(realm, endpoint))
    send = http.get if endpoint in ("certs", "discovery") else http.post
    refused = send(path, HTTP_HOST="attacker.example")
    # Django's DisallowedHost answer, before any view (a view would answer OAuth JSON).
    assert refused.status_code == 400 and not refused["Content-Type"].startswith("application/json")
    assert http.get(url(realm, "certs"), HTTP_HOST="id.example.org").status_code == 200


def test_token_path_queries_once_configuration_is_cached(http, realm, alice, django_assert_num_queries):
    client_credentials = {"grant_type": "client_credentials"}
    auth = {"HTTP_AUTHORIZATION": basic("app", SECRET)}
    assert http.post(url(realm, "token"), client_credentials, **auth).status_code == 200  # warms the caches
    with django_assert_num_queries(0):
        assert http.post(url(realm, "token"), client_credentials, **auth).status_code == 200
    body, _ = signed_tokens(http, realm, alice)
    refreshed = refresh(http, realm, body["refresh_token"])
    with django_assert_num_queries(0):  # the SSO and client sessions from the cache (decision 0113)
        refreshed = refresh(http, realm, refreshed.json()["refresh_token"])
    assert refreshed.status_code == 200
