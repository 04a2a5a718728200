"""Client credentials, password grant and client authentication methods."""
import time
import uuid

import pytest
from django.core.cache import cache
from jwcrypto import jwk

from oidc import jose
from oidc.tokens import decode
from realms.models import Event, User
from realms.users import storage

from .conftest import SECRET, basic, client_of, token_url


def iss(realm):
    return f"http://testserver/realms/{realm.name}"


def cc(http, realm, **kw):
    data = {"grant_type": "client_credentials", **kw.pop("data", {})}
    return http.post(token_url(realm), data, **kw)


def test_client_credentials_basic(http, realm):
    resp = cc(http, realm, HTTP_AUTHORIZATION=basic("app", SECRET))
    assert resp.status_code == 200, resp.content
    body = resp.json()
    assert "refresh_token" not in body and "id_token" not in body
    claims = decode(realm, body["access_token"], iss(realm))
    account = User.objects.get(service_account_client__client_id="app", realm=realm)
    assert claims["sub"] == account.pk and claims["azp"] == "app" and "sid" not in claims
    assert claims["preferred_username"] == "service-account-app"


def test_client_credentials_post(http, realm):
    resp = cc(http, realm, data={"client_id": "app", "client_secret": SECRET})
    assert resp.status_code == 200


def test_wrong_secret_is_401_with_basic_challenge(http, realm):
    realm.events_enabled = True
    realm.save()
    resp = cc(http, realm, HTTP_AUTHORIZATION=basic("app", "wrong"))
    assert resp.status_code == 401 and resp.json()["error"] == "invalid_client"
    assert resp["WWW-Authenticate"].startswith("Basic")
    assert Event.objects.filter(realm=realm, type="CLIENT_LOGIN_ERROR", error="invalid_client").exists()


def test_wrong_secret_post_is_401(http, realm):
    resp = cc(http, realm, data={"client_id": "app", "client_secret": "wrong"})
    assert resp.status_code == 401 and resp.json()["error"] == "invalid_client"


def test_unknown_client_and_missing_credentials_are_401(http, realm):
    assert cc(http, realm, HTTP_AUTHORIZATION=basic("nobody", "x")).status_code == 401
    assert cc(http, realm, data={"client_id": "app"}).status_code == 401
    assert cc(http, realm).status_code == 401


def test_public_client_cannot_use_client_credentials(http, realm):
    resp = cc(http, realm, data={"client_id": "spa"})
    assert resp.status_code == 400 and resp.json()["error"] == "unauthorized_client"


def test_bearer_only_client_cannot_get_tokens(http, realm):
    resp = cc(http, realm, HTTP_AUTHORIZATION=basic("api", "api-secret-" + "y" * 20))
    assert resp.status_code == 401


def test_service_accounts_off_is_unauthorized_client(http, realm):
    app = client_of(realm, "app")
    app.service_accounts_enabled = False
    app.save()
    resp = cc(http, realm, HTTP_AUTHORIZATION=basic("app", SECRET))
    assert resp.status_code == 400 and resp.json()["error"] == "unauthorized_client"


def test_unknown_grant_type_and_missing_grant_type(http, realm):
    assert http.post(token_url(realm), {"grant_type": "magic"}).json()["error"] == "unsupported_grant_type"
    assert http.post(token_url(realm), {}).json()["error"] == "invalid_request"


def test_unknown_scope_is_invalid_scope(http, realm):
    resp = cc(http, realm, HTTP_AUTHORIZATION=basic("app", SECRET), data={"scope": "nonsense"})
    assert resp.status_code == 400 and resp.json()["error"] == "invalid_scope"


def test_unknown_realm_is_404(http, realm):
    assert http.post("/realms/no-such-realm/protocol/openid-connect/token", {}).status_code == 404


# password grant -------------------------------------------------------------------------------

@pytest.fixture
def bob(realm):
    user = User.objects.create(realm=realm, username="bob", enabled=True)
    storage.set_password(realm, user, "correct horse")
    return user


def password_grant(http, realm, username, password, **data):
    return http.post(token_url(realm), {"grant_type": "password", "username": username, "password": password,
                                        "scope": "openid", **data}, HTTP_AUTHORIZATION=basic("app", SECRET))


def test_password_grant_and_login_events(http, realm, bob):
    realm.events_enabled = True
    realm.save()
    ok = password_grant(http, realm, "bob", "correct horse")
    assert ok.status_code == 200 and "id_token" in ok.json()
    bad = password_grant(http, realm, "bob", "wrong")
    assert bad.status_code == 400 and bad.json()["error"] == "invalid_grant"
    unknown = password_grant(http, realm, "nobody", "x")
    assert unknown.json()["error_description"] == bad.json()["error_description"]  # no user enumeration
    events = list(Event.objects.filter(realm=realm).order_by("time").values_list("type", "error"))
    assert events == [("LOGIN", ""), ("LOGIN_ERROR", "invalid_user_credentials"), ("LOGIN_ERROR", "user_not_found")]


def test_password_grant_needs_direct_access_grants(http, realm, bob):
    app = client_of(realm, "app")
    app.direct_access_grants_enabled = False
    app.save()
    resp = password_grant(http, realm, "bob", "correct horse")
    assert resp.status_code == 400 and resp.json()["error"] == "unauthorized_client"


def test_password_grant_disabled_user_and_brute_force(http, realm, bob):
    realm.brute_force_protected = True
    realm.failure_factor = 2
    realm.save()
    cache.clear()
    password_grant(http, realm, "bob", "wrong")
    # Two quick failures lock the account for a while: even the right password is refused.
    password_grant(http, realm, "bob", "wrong")
    assert password_grant(http, realm, "bob", "correct horse").status_code == 400
    cache.clear()
    bob.enabled = False
    bob.save()
    assert password_grant(http, realm, "bob", "correct horse").json()["error"] == "invalid_grant"


# JWT client authentication ---------------------------------------------------------------------

def assertion(realm, client_id, key, alg, *, aud=None, jti=None, exp_in=60, kid=None):
    now = int(time.time())
    claims = {"iss": client_id, "sub": client_id, "aud": aud or f"{iss(realm)}/protocol/openid-connect/token",
              "jti": jti or str(uuid.uuid4()), "iat": now, "exp": now + exp_in}
    return jose.sign(claims, alg=alg, key=key, kid=kid or "")


def jwt_auth(http, realm, client_id, token):
    return http.post(token_url(realm), {
        "grant_type": "client_credentials", "client_id": client_id,
        "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
        "client_assertion": token,
    })


def test_client_secret_jwt(http, realm):
    app = client_of(realm, "app")
    app.client_authenticator_type = "client-secret-jwt"
    app.save()
    good = assertion(realm, "app", SECRET.encode(), "HS256")
    assert jwt_auth(http, realm, "app", good).status_code == 200
    # jti replay
    assert jwt_auth(http, realm, "app", good).status_code == 401
    wrong_key = assertion(realm, "app", b"not-the-secret", "HS256")
    assert jwt_auth(http, realm, "app", wrong_key).status_code == 401
    # The method is the client's: a plain secret is not accepted any more.
    assert cc(http, realm, HTTP_AUTHORIZATION=basic("app", SECRET)).status_code == 401


def test_private_key_jwt(http, realm, key_client):
    resp = jwt_auth(http, realm, "app", assertion(realm, "app", key_client, "ES256", kid="k1"))
    assert resp.status_code == 200, resp.content


def test_private_key_jwt_failures(http, realm, key_client):
    other = jwk.JWK.generate(kty="EC", crv="P-256", kid="k1")
    assert jwt_auth(http, realm, "app", assertion(realm, "app", other, "ES256", kid="k1")).status_code == 401
    assert jwt_auth(http, realm, "app", assertion(realm, "app", key_client, "ES256", kid="k1",
                                                 aud="https://elsewhere/token")).status_code == 401
    assert jwt_auth(http, realm, "app", assertion(realm, "app", key_client, "ES256", kid="k1",
                                                 exp_in=-60)).status_code == 401
    # HS256 keyed with the published public key (algorithm confusion) is refused.
    public_as_secret = key_client.export_public().encode()
    assert jwt_auth(http, realm, "app", assertion(realm, "app", public_as_secret, "HS256",
                                                 kid="k1")).status_code == 401
    # alg none
    head = jose.b64e(b'{"alg":"none","kid":"k1"}')
    body = jose.b64e(b'{"iss":"app","sub":"app"}')
    assert jwt_auth(http, realm, "app", f"{head}.{body}.").status_code == 401


def test_private_key_jwt_replay(http, realm, key_client):
    token = assertion(realm, "app", key_client, "ES256", kid="k1")
    assert jwt_auth(http, realm, "app", token).status_code == 200
    replay = jwt_auth(http, realm, "app", token)
    assert replay.status_code == 401 and replay.json()["error"] == "invalid_client"


def test_private_key_jwt_with_jwks_url_and_ssrf_guard(live_server, realm, settings, outbound_loopback):
    import requests

    from oidc import client_auth
    from realms.data.keys import realm_keys

    # The realm's own JWKS stands in for a client's published keys; its private half signs.
    kid, key = realm_keys(realm).signer("RS256")
    live_issuer = f"{live_server.url}/realms/{realm.name}"
    app = client_of(realm, "app")
    app.client_authenticator_type = "client-jwt"
    app.attributes = {**app.attributes, "use.jwks.url": "true",
                      "jwks.url": f"{live_issuer}/protocol/openid-connect/certs"}
    app.save()

    def post():
        now = int(time.time())
        token = jose.sign({"iss": "app", "sub": "app", "aud": live_issuer, "jti": str(uuid.uuid4()), "iat": now,
                           "exp": now + 60}, alg="RS256", key=key, kid=kid)
        return requests.post(f"{live_issuer}/protocol/openid-connect/token", data={
            "grant_type": "client_credentials", "client_id": "app", "client_assertion": token,
            "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"}, timeout=10)

    client_auth._jwks_by_url.clear()
    assert post().status_code == 200
    # Without the development allowance a loopback JWKS URL is never fetched.
    client_auth._jwks_by_url.clear()
    settings.IDP_OUTBOUND_ALLOWED_NETWORKS = []
    refused = post()
    assert refused.status_code == 401 and refused.json()["error"] == "invalid_client"
