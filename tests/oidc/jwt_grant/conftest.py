"""Fixtures of the JWT authorization grant tests: a realm with an identity provider trusted for the
grant, users linked to it, clients switched on and off, and the provider's own signing keys served
as a JWKS by a real HTTP server on loopback (threading http.server on a free port)."""
import base64
import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.test import Client as HttpClient
from jwcrypto import jwk, jws

from oidc import client_auth
from realms.representation import import_realm

SECRET = "jwt-grant-secret-" + "s" * 20
IDP_ALIAS = "partner"
IDP_ISSUER = "https://partner.example"
SUBJECT = "partner-user-1"
GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"


class JwksServer:
    """A provider's JWKS endpoint: ``keys`` is what it publishes now; ``hits`` counts the GETs."""

    def __init__(self):
        self.keys, self.hits = [], 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 -- http.server's name
                owner.hits += 1
                body = json.dumps({"keys": [k.export_public(as_dict=True) for k in owner.keys]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        # A path per server: the JWKS cache is per URL and per process.
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/jwks/{uuid.uuid4().hex}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def new_key(kid=None, kty="EC"):
    kid = kid or uuid.uuid4().hex[:12]
    if kty == "RSA":
        return jwk.JWK.generate(kty="RSA", size=2048, kid=kid, use="sig")
    return jwk.JWK.generate(kty="EC", crv="P-256", kid=kid, use="sig")


def sign(claims, key, alg=None, kid=True, typ="JWT"):
    """A compact JWS made with jwcrypto (not with the code under test)."""
    alg = alg or ("ES256" if key.get("kty") == "EC" else "RS256")
    header = {"alg": alg, "typ": typ}
    if kid:
        header["kid"] = key.get("kid") if kid is True else kid
    token = jws.JWS(json.dumps(claims).encode())
    token.add_signature(key, alg=alg, protected=json.dumps(header))
    return token.serialize(compact=True)


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unsigned(claims, header):
    """A token with any header and signature bytes (alg none, HMAC ...)."""
    return f"{b64(json.dumps(header).encode())}.{b64(json.dumps(claims).encode())}."


def claims_for(realm, **over):
    now = int(time.time())
    claims = {"iss": IDP_ISSUER, "sub": SUBJECT, "aud": issuer_of(realm), "exp": now + 120, "iat": now,
              "jti": uuid.uuid4().hex}
    claims.update(over)
    return {k: v for k, v in claims.items() if v is not None}


def issuer_of(realm):
    return f"http://testserver/realms/{realm.name}"


def token_url(realm):
    return f"/realms/{realm.name}/protocol/openid-connect/token"


def basic(client_id, secret=SECRET):
    return "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()


def grant(http, realm, assertion, client_id="agent", secret=SECRET, **extra):
    data = {"grant_type": GRANT, **extra}
    if assertion is not None:
        data["assertion"] = assertion
    headers = {"HTTP_AUTHORIZATION": basic(client_id, secret)} if secret else {}
    if not secret:
        data["client_id"] = client_id
    return http.post(token_url(realm), data, **headers)


@pytest.fixture
def jwks_server():
    server = JwksServer()
    yield server
    server.close()
    client_auth._jwks_by_url.pop((server.url, "sig"), None)


@pytest.fixture
def idp_key(jwks_server):
    key = new_key()
    jwks_server.keys = [key]
    return key


def oidc_config(issuer, jwks_url, **extra):
    """An OpenID Connect provider trusted for the grant (Keycloak's jwtAuthorizationGrantEnabled)."""
    return {"issuer": issuer, "useJwksUrl": "true", "jwksUrl": jwks_url, "jwtAuthorizationGrantEnabled": "true",
            "clientId": "c", "clientSecret": "s", "authorizationUrl": f"{issuer}/auth", "tokenUrl": f"{issuer}/token",
            **extra}


def realm_representation(name, jwks_url, *, provider_id="oidc", idp_config=None):
    config = oidc_config(IDP_ISSUER, jwks_url, **(idp_config or {}))
    enabled = {"oauth2.jwt.authorization.grant.enabled": "true"}
    return {
        "realm": name,
        "enabled": True,
        "eventsEnabled": True,
        "identityProviders": [
            {"alias": IDP_ALIAS, "providerId": provider_id, "enabled": True, "config": config},
            {"alias": "other", "providerId": "oidc", "enabled": True,
             "config": oidc_config("https://other.example", jwks_url)},
        ],
        "clients": [
            {"clientId": "agent", "secret": SECRET, "standardFlowEnabled": False,
             "attributes": {**enabled, "oauth2.jwt.authorization.grant.idp": f"other##{IDP_ALIAS}"}},
            {"clientId": "switched-off", "secret": SECRET, "attributes": {"oauth2.jwt.authorization.grant.idp": IDP_ALIAS}},
            {"clientId": "other-only", "secret": SECRET,
             "attributes": {**enabled, "oauth2.jwt.authorization.grant.idp": "other"}},
            {"clientId": "public-agent", "publicClient": True, "redirectUris": ["https://app.example/cb"],
             "attributes": {**enabled, "oauth2.jwt.authorization.grant.idp": IDP_ALIAS}},
            {"clientId": "key-agent", "clientAuthenticatorType": "client-jwt",
             "attributes": {**enabled, "oauth2.jwt.authorization.grant.idp": IDP_ALIAS}},
        ],
        "users": [
            {"username": "alice", "enabled": True, "email": "alice@example.org", "emailVerified": True,
             "firstName": "Alice", "lastName": "Liddell",
             "federatedIdentities": [{"identityProvider": IDP_ALIAS, "userId": SUBJECT, "userName": "alice"}]},
            {"username": "bob", "enabled": False,
             "federatedIdentities": [{"identityProvider": IDP_ALIAS, "userId": "partner-user-2", "userName": "bob"}]},
            {"username": "carol", "enabled": True, "requiredActions": ["UPDATE_PASSWORD"],
             "federatedIdentities": [{"identityProvider": IDP_ALIAS, "userId": "partner-user-3", "userName": "carol"}]},
            {"username": "dave", "enabled": True},
        ],
    }


@pytest.fixture
def make_realm(db, fresh_caches, outbound_loopback, jwks_server):
    def make(**kw):
        return import_realm(realm_representation("j" + uuid.uuid4().hex[:10], jwks_server.url, **kw)).realm
    return make


@pytest.fixture
def realm(make_realm, idp_key):
    return make_realm()


@pytest.fixture
def http():
    return HttpClient()
