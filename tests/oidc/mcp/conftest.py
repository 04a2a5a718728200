"""A realm as an MCP deployment has it: resource servers (bearer-only clients whose attribute
``resource_url`` is the API's URL), a confidential client that reaches one through an audience
mapper, a public client that reaches one through the user's roles in its full scope, and the
helpers that sign a user in through the authorization endpoint in-process."""
import base64
import html
import json
import re
import secrets
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client as HttpClient

from oidc.codes import s256_challenge
from realms.representation import import_realm

SECRET = "mcp-secret-" + "m" * 24
PASSWORD = "mcp-password-1"
REDIRECT = "https://app.example/cb"
SPA_REDIRECT = "http://127.0.0.1/spa/cb"
MCP = "https://mcp.example/mcp"
OTHER = "https://other.example/api"
UNKNOWN = "https://nobody.example/api"


def representation(name, attributes=None):
    return {
        "realm": name, "enabled": True, "eventsEnabled": True, "attributes": attributes or {},
        "clients": [
            {"clientId": "app", "secret": SECRET, "serviceAccountsEnabled": True, "redirectUris": [REDIRECT],
             "protocolMappers": [{"name": "mcp audience", "protocol": "openid-connect",
                                  "protocolMapper": "oidc-audience-mapper",
                                  "config": {"included.client.audience": "mcp-server",
                                             "access.token.claim": "true"}}]},
            {"clientId": "spa", "publicClient": True, "redirectUris": [SPA_REDIRECT],
             "attributes": {"pkce.code.challenge.method": "S256"}},
            {"clientId": "mcp-server", "bearerOnly": True, "attributes": {"resource_url": MCP}},
            {"clientId": "other-api", "bearerOnly": True, "attributes": {"resource_url": OTHER}},
        ],
        "roles": {"client": {"mcp-server": [{"name": "tools"}]}},
        "users": [{"username": "alice", "enabled": True, "email": "alice@example.org", "firstName": "Alice",
                   "lastName": "Liddell", "credentials": [{"type": "password", "value": PASSWORD}],
                   "realmRoles": [f"default-roles-{name}"], "clientRoles": {"mcp-server": ["tools"]}}],
    }


@pytest.fixture
def realm(db, fresh_caches):
    name = "m" + uuid.uuid4().hex[:10]
    return import_realm(representation(name)).realm


@pytest.fixture
def http():
    return HttpClient()


def auth_url(realm):
    return f"/realms/{realm.name}/protocol/openid-connect/auth"


def token_url(realm):
    return f"/realms/{realm.name}/protocol/openid-connect/token"


def basic(client_id="app", secret=SECRET):
    return "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()


def claims_of(jwt):
    payload = jwt.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def action_of(page):
    return html.unescape(re.search(r'<form[^>]*action="([^"]+)"', page.content.decode()).group(1))


def query_of(response):
    assert response.status_code == 302, response.content[:500]
    return parse_qs(urlsplit(response["Location"]).query)


def authorize(http, realm, *, client_id="app", redirect_uri=REDIRECT, resource=(), scope="openid", **extra):
    """The authorization request; returns (response, PKCE verifier)."""
    verifier = secrets.token_urlsafe(48)
    params = {"client_id": client_id, "redirect_uri": redirect_uri, "response_type": "code", "scope": scope,
              "state": "st-1", "code_challenge": s256_challenge(verifier), "code_challenge_method": "S256",
              "resource": list(resource), **extra}
    return http.get(auth_url(realm), params), verifier


def sign_in(http, realm, **kwargs):
    """(code, verifier) after the login form; raises if the request was refused before it."""
    page, verifier = authorize(http, realm, **kwargs)
    if page.status_code == 302 and "code=" in page["Location"]:  # answered from the SSO session
        return query_of(page)["code"][0], verifier
    assert page.status_code == 200 and 'name="password"' in page.content.decode(), page.content[:500]
    done = http.post(action_of(page), {"username": "alice", "password": PASSWORD})
    if done.status_code == 200 and b'name="consent" value="accept"' in done.content:
        done = http.post(action_of(done), {"consent": "accept"})
    return query_of(done)["code"][0], verifier


def redeem(http, realm, code, verifier, *, client_id="app", redirect_uri=REDIRECT, resource=(), secret=SECRET):
    data = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri,
            "code_verifier": verifier, "resource": list(resource)}
    headers = {}
    if secret:
        headers["HTTP_AUTHORIZATION"] = basic(client_id, secret)
    else:
        data["client_id"] = client_id
    return http.post(token_url(realm), data, **headers)


class DocumentServer:
    """A loopback HTTP server answering client id metadata documents: ``documents[path] =
    (status, headers, body)``; ``hits[path]`` counts the requests."""

    def __init__(self):
        self.documents, self.hits = {}, {}
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 -- http.server's name
                owner.hits[self.path] = owner.hits.get(self.path, 0) + 1
                status, headers, body = owner.documents.get(self.path, (404, {}, b"{}"))
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def serve(self, path, document, status=200, headers=None):
        body = document if isinstance(document, bytes) else json.dumps(document).encode()
        self.documents[path] = (status, headers or {}, body)
        return self.base + path

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def documents(outbound_loopback):
    server = DocumentServer()
    yield server
    server.close()
