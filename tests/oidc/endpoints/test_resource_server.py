"""The resource-server helper against a live server's JWKS (spec 1 §4 resource server call, §7)."""
import time

import pytest
import requests
from django.test import RequestFactory
from jwcrypto import jwk

from oidc import jose, resource_server
from oidc.errors import InsufficientScope, InvalidToken
from oidc.resource_server import BearerValidator, require_bearer
from realms.data.keys import realm_keys, rotate_key
from realms.models import ProtocolMapper

from .conftest import SECRET, client_of

AUDIENCE = "orders-api"


@pytest.fixture
def live_realm(live_server, realm):
    ProtocolMapper.objects.create(client=client_of(realm, "app"), name="orders audience",
                                  protocol_mapper="oidc-audience-mapper",
                                  config={"included.custom.audience": AUDIENCE, "access.token.claim": "true"})
    return realm


def issuer(live_server, realm):
    return f"{live_server.url}/realms/{realm.name}"


def client_credentials_token(live_server, realm, scope=""):
    resp = requests.post(f"{issuer(live_server, realm)}/protocol/openid-connect/token",
                         data={"grant_type": "client_credentials", "scope": scope}, auth=("app", SECRET), timeout=10)
    assert resp.status_code == 200, resp.text
    return resp.json()["access_token"]


def forge(realm, claims, *, key=None, alg="RS256", kid=None):
    signer_kid, signer = realm_keys(realm).signer("RS256")
    return jose.sign(claims, alg=alg, key=key if key is not None else signer, kid=kid or signer_kid)


def good_claims(live_server, realm, **over):
    now = int(time.time())
    return {"iss": issuer(live_server, realm), "aud": AUDIENCE, "exp": now + 60, "iat": now, "sub": "u1",
            "typ": "Bearer", "scope": "openid read", "realm_access": {"roles": ["reader"]}, **over}


def test_valid_token_from_the_token_endpoint(live_server, live_realm):
    v = BearerValidator(issuer=issuer(live_server, live_realm), audience=AUDIENCE)
    claims = v.validate(client_credentials_token(live_server, live_realm))
    assert claims["azp"] == "app"


@pytest.mark.parametrize("case", ["bad_signature", "wrong_iss", "wrong_aud", "expired", "alg_none",
                                  "hs256_with_public_key", "id_token", "unknown_kid", "garbage"])
def test_refused_tokens(live_server, live_realm, case):
    v = BearerValidator(issuer=issuer(live_server, live_realm), audience=AUDIENCE)
    claims = good_claims(live_server, live_realm)
    kid, signer = realm_keys(live_realm).signer("RS256")
    if case == "bad_signature":
        token = forge(live_realm, claims, key=jwk.JWK.generate(kty="RSA", size=2048), kid=kid)
    elif case == "wrong_iss":
        token = forge(live_realm, {**claims, "iss": "https://other.example/realms/x"})
    elif case == "wrong_aud":
        token = forge(live_realm, {**claims, "aud": "another-api"})
    elif case == "expired":
        token = forge(live_realm, {**claims, "exp": int(time.time()) - resource_server.LEEWAY - 5})
    elif case == "alg_none":
        token = jose.b64e(b'{"alg":"none","kid":"%s"}' % kid.encode()) + "." + jose.b64e(b'{"sub":"x"}') + "."
    elif case == "hs256_with_public_key":
        token = forge(live_realm, claims, key=signer.export_to_pem(), alg="HS256", kid=kid)
    elif case == "id_token":
        token = forge(live_realm, {**claims, "typ": "ID"})
    elif case == "unknown_kid":
        token = forge(live_realm, claims, kid="nope")
    else:
        token = "not.a.jwt"
    with pytest.raises(InvalidToken):
        v.validate(token)


def test_small_leeway_on_exp(live_server, live_realm):
    v = BearerValidator(issuer=issuer(live_server, live_realm), audience=AUDIENCE)
    v.validate(forge(live_realm, good_claims(live_server, live_realm, exp=int(time.time()) - 5)))


def test_scope_and_role_requirements():
    claims = {"scope": "openid read", "realm_access": {"roles": ["reader"]},
              "resource_access": {"api": {"roles": ["read"]}}}
    resource_server.check_scope_and_role(claims, scope="read", role="reader")
    resource_server.check_scope_and_role(claims, role="api:read")
    for kwargs in ({"scope": "write"}, {"role": "writer"}, {"role": "api:admin"}):
        with pytest.raises(InsufficientScope):
            resource_server.check_scope_and_role(claims, **kwargs)


def test_unknown_kid_refetches_jwks_after_rotation_rate_limited(live_server, live_realm, monkeypatch):
    v = BearerValidator(issuer=issuer(live_server, live_realm), audience=AUDIENCE)
    v.validate(client_credentials_token(live_server, live_realm))
    fetches = []
    real_fetch = v.jwks._fetch
    monkeypatch.setattr(v.jwks, "_fetch", lambda: (fetches.append(1), real_fetch())[1])
    rotate_key(live_realm)
    new_token = client_credentials_token(live_server, live_realm)
    # Within the refetch interval an unknown kid does not trigger a fetch ...
    with pytest.raises(InvalidToken):
        v.validate(new_token)
    assert fetches == []
    # ... after it, one fetch picks up the new key.
    v.jwks.fetched_at -= resource_server.REFETCH_INTERVAL
    assert v.validate(new_token)["azp"] == "app"
    with pytest.raises(InvalidToken):
        v.validate(forge(live_realm, good_claims(live_server, live_realm), kid="garbage"))
    assert fetches == [1]


def test_decorator_401_and_403(live_server, live_realm):
    factory = RequestFactory()
    iss = issuer(live_server, live_realm)

    @require_bearer(issuer=iss, audience=AUDIENCE, scope="email")
    def view(request):
        from django.http import JsonResponse
        return JsonResponse({"sub": request.token["sub"]})

    token = client_credentials_token(live_server, live_realm)
    assert view(factory.get("/", HTTP_AUTHORIZATION="Bearer " + token)).status_code == 200
    missing = view(factory.get("/"))
    assert missing.status_code == 401 and 'error="invalid_token"' in missing["WWW-Authenticate"]
    expired = view(factory.get("/", HTTP_AUTHORIZATION="Bearer " + forge(
        live_realm, good_claims(live_server, live_realm, exp=int(time.time()) - 600))))
    assert expired.status_code == 401

    @require_bearer(issuer=iss, audience=AUDIENCE, scope="admin")
    def admin_view(request):
        raise AssertionError("must not run")

    denied = admin_view(factory.get("/", HTTP_AUTHORIZATION="Bearer " + token))
    assert denied.status_code == 403 and 'error="insufficient_scope"' in denied["WWW-Authenticate"]


def test_drf_authentication_class(live_server, live_realm, settings):
    from rest_framework.response import Response
    from rest_framework.views import APIView

    from oidc.resource_server import BearerAuthentication

    settings.OIDC_RESOURCE_SERVER = {"ISSUER": issuer(live_server, live_realm), "AUDIENCE": AUDIENCE}

    class Orders(APIView):
        authentication_classes = [BearerAuthentication]
        required_role = "api:admin"

        def get(self, request):
            return Response({"sub": request.user.pk})

    token = client_credentials_token(live_server, live_realm)
    factory = RequestFactory()
    assert Orders.as_view()(factory.get("/", HTTP_AUTHORIZATION="Bearer bad.token.x")).status_code == 401
    assert Orders.as_view()(factory.get("/", HTTP_AUTHORIZATION="Bearer " + token)).status_code == 403
    Orders.required_role = None
    assert Orders.as_view()(factory.get("/", HTTP_AUTHORIZATION="Bearer " + token)).status_code == 200


def test_demo_api_over_http(live_server, transactional_db, settings):
    from oidc import demo
    from realms.models import User
    from realms.representation import import_realm

    realm = import_realm({"realm": demo.REALM, "clients": [{
        "clientId": "demo-backend", "secret": SECRET, "serviceAccountsEnabled": True,
        "protocolMappers": [{"name": "aud", "protocol": "openid-connect", "protocolMapper": "oidc-audience-mapper",
                             "config": {"included.custom.audience": demo.AUDIENCE, "access.token.claim": "true"}}],
    }]}).realm
    settings.OIDC_RESOURCE_SERVER_BASE_URL = live_server.url
    token = requests.post(f"{live_server.url}/realms/{realm.name}/protocol/openid-connect/token",
                          data={"grant_type": "client_credentials"}, auth=("demo-backend", SECRET),
                          timeout=10).json()["access_token"]
    ok = requests.get(f"{live_server.url}/demo/api/whoami", headers={"Authorization": "Bearer " + token}, timeout=10)
    assert ok.status_code == 200, ok.text
    account = User.objects.get(service_account_client__client_id="demo-backend")
    assert ok.json()["sub"] == account.pk and ok.json()["client"] == "demo-backend"
    denied = requests.get(f"{live_server.url}/demo/api/whoami", timeout=10)
    assert denied.status_code == 401


# Trust anchors come from configuration, never from the request (issue 11 finding 5) ------------

@pytest.fixture
def attacker():
    """A listener the attacker controls, serving a JWKS with the attacker's key; records calls."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    key = jwk.JWK.generate(kty="RSA", size=2048, kid="evil", use="sig", alg="RS256")
    calls = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            calls.append(self.path)
            body = json.dumps({"keys": [json.loads(key.export_public())]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield key, f"127.0.0.1:{server.server_address[1]}", calls
    server.shutdown()
    server.server_close()


def _attack(http, key, host, realm="demo"):
    from oidc import demo

    now = int(time.time())
    token = jose.sign({"iss": f"http://{host}/realms/{realm}", "aud": demo.AUDIENCE, "sub": "mallory",
                       "exp": now + 60, "iat": now, "typ": "Bearer"}, alg="RS256", key=key, kid="evil")
    return http.get("/demo/api/whoami", HTTP_AUTHORIZATION="Bearer " + token, HTTP_HOST=host)


def test_forged_host_chooses_no_issuer_and_no_jwks(attacker, settings, db):
    from django.test import Client as HttpClient

    key, host, calls = attacker
    settings.IDP_BASE_URL = ""
    settings.OIDC_RESOURCE_SERVER_BASE_URL = ""
    resource_server._validators.clear()
    # Nothing configured: a configuration error, not a guess from the Host header.
    refused = _attack(HttpClient(raise_request_exception=False), key, host)
    assert refused.status_code == 500 and calls == []
    # Configured: the token names the attacker's issuer, so it is refused; the JWKS fetched is
    # the configured one, never the attacker's.
    settings.OIDC_RESOURCE_SERVER_BASE_URL = "http://127.0.0.1:9"  # nothing listens: keys unavailable
    refused = _attack(HttpClient(), key, host)
    assert refused.status_code == 401 and 'error="invalid_token"' in refused["WWW-Authenticate"]
    assert calls == []
    resource_server._validators.clear()
