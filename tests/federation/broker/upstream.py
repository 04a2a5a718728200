"""The upstream providers of the OIDC/OAuth 2 brokering tests, on free loopback ports.

* ``OidcUpstream``: panva's oidc-provider under node (tests/js/oidc-upstream.mjs), with RSA and
  EC signing keys made here. Its development interactions accept any login; ``sign_in`` drives
  them as a browser would and answers where the provider sends the browser back (our broker
  endpoint, with ``code`` and ``state``). Clients are registered per test (open dynamic
  registration), so each test chooses its client authentication and keys.
* ``JsonServer``: a small HTTP server answering JSON routes a test sets (a JWKS whose keys the
  test rotates, the token and user documents of GitHub and Facebook, a userinfo that lies), and
  recording the requests it got."""
import json
import re
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urljoin, urlsplit

import requests
from jwcrypto import jwk

from tests.idp.test_modes import free_port

JS = Path(__file__).resolve().parents[2] / "js"


class OidcUpstream:
    def __init__(self, directory):
        self.port = free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.rsa = jwk.JWK.generate(kty="RSA", size=2048, kid="upstream-rsa", alg="RS256", use="sig")
        self.ec = jwk.JWK.generate(kty="EC", crv="P-256", kid="upstream-ec", alg="ES256", use="sig")
        # Sign in with Apple's client: its secret is a JWT the developer signed (ES256, team as
        # issuer), registered as the client secret it sends.
        apple_key = jwk.JWK.generate(kty="EC", crv="P-256")
        self.apple_secret = _es256({"iss": "TEAM123", "sub": "apple-app", "aud": "https://appleid.apple.com",
                                    "iat": now(), "exp": now() + 86400 * 180}, apple_key)
        apple = {"client_id": "apple-app", "client_secret": self.apple_secret, "token_endpoint_auth_method":
                 "client_secret_post", "redirect_uris": ["http://testserver/realms/acme/broker/apple/endpoint"],
                 "response_types": ["code"], "grant_types": ["authorization_code"]}
        config = {"port": self.port, "clients": [apple],
                  "jwks": {"keys": [self.rsa.export(as_dict=True), self.ec.export(as_dict=True)]}}
        path = directory / "upstream.json"
        path.write_text(json.dumps(config))
        self.proc = subprocess.Popen(["node", str(JS / "oidc-upstream.mjs"), str(path)], cwd=JS,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        log = []
        while not (log and log[-1].startswith("ready")):  # it warns about its dev settings first
            line = self.proc.stdout.readline()
            if not line:
                self.proc.kill()
                raise AssertionError("oidc-provider did not start:\n" + "".join(log))
            log.append(line)
        # Its log, kept for a failing test to show (and so the pipe never fills).
        self.log = log
        threading.Thread(target=lambda: log.extend(self.proc.stdout), daemon=True).start()
        self.discovery = requests.get(f"{self.issuer}/.well-known/openid-configuration", timeout=10).json()

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()

    def register(self, redirect_uri, **metadata):
        """A new client (RFC 7591): its registered metadata, with client_id and client_secret."""
        body = {"redirect_uris": [redirect_uri], "response_types": ["code"], "grant_types": ["authorization_code"],
                "token_endpoint_auth_method": "client_secret_basic", "backchannel_logout_session_required": True,
                "backchannel_logout_uri": f"{redirect_uri}/backchannel_logout",
                "post_logout_redirect_uris": [f"{redirect_uri}/logout_response"], **metadata}
        answer = requests.post(f"{self.issuer}/reg", json=body, timeout=10)
        assert answer.status_code == 201, answer.text
        return answer.json()

    def config(self, client, **overrides):
        """Keycloak's config map of an ``oidc`` provider for ``client`` (as import-config reads the
        discovery document, with the client's credentials)."""
        d = self.discovery
        values = {"authorizationUrl": d["authorization_endpoint"], "tokenUrl": d["token_endpoint"],
                  "userInfoUrl": d["userinfo_endpoint"], "jwksUrl": d["jwks_uri"], "issuer": d["issuer"],
                  "logoutUrl": d["end_session_endpoint"], "validateSignature": "true", "useJwksUrl": "true",
                  "clientId": client["client_id"], "clientSecret": client.get("client_secret", ""),
                  "clientAuthMethod": client.get("token_endpoint_auth_method", "client_secret_basic"),
                  "defaultScope": "openid email profile", **overrides}
        return {k: v for k, v in values.items() if v is not None}

    def sign_in(self, url, login="ada", session=None):
        """Follow ``url`` (our redirect to the provider) through its login form: the URL the
        provider sends the browser back to (the first one outside the provider), or for
        ``response_mode=form_post`` the (action, fields) of the form it has the browser post."""
        s = session or requests.Session()
        while True:
            answer = s.get(url, allow_redirects=False, timeout=10)
            if answer.status_code in (302, 303):
                url = urljoin(url, answer.headers["Location"])
                if not url.startswith(self.issuer):
                    return url
                continue
            assert answer.status_code == 200, answer.text[:500]
            action = _form_action(answer.text)
            if not urljoin(url, action).startswith(self.issuer):  # response_mode=form_post: the answer's form
                return urljoin(url, action), dict(re.findall(r'name="([^"]+)" value="([^"]*)"', answer.text))
            prompt = "login" if 'name="prompt" value="login"' in answer.text else "consent"
            data = {"prompt": prompt, "login": login, "password": "any"} if prompt == "login" else {"prompt": prompt}
            posted = s.post(urljoin(url, action), data=data, allow_redirects=False, timeout=10)
            assert posted.status_code in (302, 303), posted.text[:500]
            url = urljoin(url, posted.headers["Location"])
            if not url.startswith(self.issuer):
                return url


def _es256(claims, key):
    from jwcrypto import jws
    from jwcrypto.common import json_encode

    token = jws.JWS(json_encode(claims))
    token.add_signature(key, alg="ES256", protected=json_encode({"alg": "ES256", "kid": "APPLEKEY1"}))
    return token.serialize(compact=True)


def _form_action(html):
    start = html.index('action="') + len('action="')
    return html[start:html.index('"', start)]


class JsonServer:
    """Routes: path -> (status, JSON body or callable(request info) -> (status, body))."""

    def __init__(self):
        self.routes, self.requests = {}, []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode() if length else ""
                parts = urlsplit(self.path)
                info = {"method": self.command, "path": parts.path, "query": parse_qs(parts.query),
                        "headers": dict(self.headers), "form": parse_qs(body), "body": body}
                server.requests.append(info)
                route = server.routes.get(parts.path)
                if route is None:
                    status, payload = 404, {"error": "not_found"}
                else:
                    status, payload = route(info) if callable(route) else route
                data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/jwt" if isinstance(payload, str) else "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _answer

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.httpd.server_port}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def reset(self):
        self.routes.clear()
        self.requests.clear()

    def hits(self, path):
        return [r for r in self.requests if r["path"] == path]

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def now():
    return int(time.time())
