"""Request objects (RFC 9101) by value, by reference and inside a push: signature, algorithm,
iss/aud, times, jti replay, the client's requirement, the request.uris allowlist and SSRF."""
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from jwcrypto import jwk

from realms.data.keys import generate_key
from realms.models import Event

from .conftest import AUTH, REDIRECT, code_of, push, redeem, request_object, set_attributes, sign_in


def authorize_with(http, **params):
    return http.get(AUTH, {"client_id": "web-app", **params})


def pushed_error(http, token):
    answer = push(http, request=token)
    assert answer.status_code == 400, answer.content
    return answer.json()


def test_signed_request_object_by_value(client, web_app, bob, key):
    page = authorize_with(client, request=request_object(key, state="from-object"))
    done = sign_in(client, page)
    assert "state=from-object" in done["Location"]
    assert redeem(client, code_of(done)).status_code == 200


def test_object_claims_take_precedence_over_the_query(client, web_app, bob, key):
    page = authorize_with(client, request=request_object(key, state="object"), state="query", response_type="code",
                          scope="openid")
    assert "state=object" in sign_in(client, page)["Location"]


def test_signed_request_object_in_a_push(client, web_app, bob, key):
    answer = push(client, request=request_object(key, state="pushed-object"))
    assert answer.status_code == 201, answer.content
    page = authorize_with(client, request_uri=answer.json()["request_uri"])
    assert "state=pushed-object" in sign_in(client, page)["Location"]


def test_hs256_request_object_keyed_with_the_client_secret(client, web_app, bob):
    answer = push(client, request=request_object(None, alg="HS256"))
    assert answer.status_code == 201, answer.content


def test_bad_signature_is_invalid_request_object(client, web_app, key):
    token = request_object(key)
    head, body, sig = token.split(".")
    forged = request_object(key, state="other").split(".")[1]
    assert pushed_error(client, f"{head}.{forged}.{sig}") == {
        "error": "invalid_request_object", "error_description": "Failed to verify signature on 'request' object"}
    # At the authorization endpoint: a page, never a redirect to the unverified redirect_uri.
    page = authorize_with(client, request=f"{head}.{forged}.{sig}")
    assert page.status_code == 400
    assert Event.objects.filter(type="LOGIN_ERROR", error="invalid_request_object").exists()


def test_another_key_does_not_verify(client, web_app, key):
    from jwcrypto import jwk
    stranger = jwk.JWK.generate(kty="EC", crv="P-256", kid="k1")
    assert pushed_error(client, request_object(stranger))["error"] == "invalid_request_object"


def test_algorithm_other_than_the_registered_one_is_refused(client, web_app, key):
    set_attributes(web_app, **{"request.object.signature.alg": "PS256"})
    assert pushed_error(client, request_object(key))["error_description"] == (
        "Request object signed with different algorithm than client requested algorithm")
    set_attributes(web_app, **{"request.object.signature.alg": "ES256"})
    assert push(client, request=request_object(key)).status_code == 201


def test_unsigned_object_only_when_the_client_asks_for_none(client, web_app, bob):
    import json

    from oidc.jose import b64e
    from tests.oidc.par.conftest import PARAMS
    body = {"client_id": "web-app", **PARAMS}
    unsigned = b64e(b'{"alg":"none"}') + "." + b64e(json.dumps(body).encode()) + "."
    assert pushed_error(client, unsigned)["error_description"] == "None signed algorithm is not allowed"
    set_attributes(web_app, **{"request.object.signature.alg": "none"})
    assert push(client, request=unsigned).status_code == 201


@pytest.mark.parametrize(("claims", "description"), [
    ({"iss": "someone-else"}, "Invalid request object: iss must be the client_id"),
    ({"aud": "https://other.example/realms/acme"}, "Invalid request object: aud must include the issuer"),
    ({"aud": None}, "Invalid request object: aud must include the issuer"),
    ({"exp": int(time.time()) - 60}, "Request object expired"),
    ({"nbf": int(time.time()) + 600}, "Request object nbf is in the future"),
    ({"iat": int(time.time()) + 600}, "Request object iat is in the future"),
    ({"client_id": "other"}, "The client_id parameter doesn't match the one from OIDC 'request' or 'request_uri'"),
    ({"request_uri": "https://app.example/ro"}, "The request_uri claim should not be set in the request object"),
])
def test_claims_checks(client, web_app, key, claims, description):
    assert pushed_error(client, request_object(key, **claims)) == {
        "error": "invalid_request_object", "error_description": description}


def test_aud_list_with_the_issuer_is_accepted(client, web_app, key):
    from tests.oidc.par.conftest import ISSUER
    assert push(client, request=request_object(key, aud=["https://x.example", ISSUER])).status_code == 201


def test_jti_replay_is_refused(client, web_app, bob, key):
    token = request_object(key, jti="once")
    assert push(client, request=token).status_code == 201
    assert pushed_error(client, token)["error_description"] == "Request object already used (jti replay)"
    # The same at the authorization endpoint.
    other = request_object(key, jti="twice")
    assert authorize_with(client, request=other).status_code == 200
    assert authorize_with(client, request=other).status_code == 400


@pytest.mark.parametrize(("required", "needs"), [
    ("request or request_uri", "Client is required to use 'request' or 'request_uri' parameter."),
    ("request only", "Client is required to use 'request' parameter."),
    ("request_uri only", "Client is required to use 'request_uri' parameter."),
])
def test_request_object_required(client, web_app, bob, key, required, needs):
    set_attributes(web_app, **{"request.object.required": required})
    assert pushed_error(client, None) == {"error": "invalid_request_object", "error_description": needs}
    from tests.oidc.par.conftest import PARAMS
    page = authorize_with(client, **PARAMS)
    assert page.status_code == 400
    assert Event.objects.filter(type="LOGIN_ERROR", error="invalid_request_object").exists()


def test_request_or_request_uri_accepts_either(client, web_app, bob, key):
    set_attributes(web_app, **{"request.object.required": "request or request_uri"})
    answer = push(client, request=request_object(key))
    assert answer.status_code == 201
    assert authorize_with(client, request_uri=answer.json()["request_uri"]).status_code == 200
    assert authorize_with(client, request=request_object(key)).status_code == 200


def _encrypted(key, realm, *, kid=None, alg="RSA-OAEP", enc="A256GCM"):
    """A request object signed with the client's key, then encrypted to the realm's encryption key."""
    from jwcrypto import jwe

    from realms.data.keys import realm_keys
    kid_, recipient = next(iter(realm_keys(realm).decrypters.items()))
    public = jwk.JWK(**recipient[1].export_public(as_dict=True))
    token = jwe.JWE(request_object(key).encode(), protected={"alg": alg, "enc": enc, "cty": "JWT", "kid": kid or kid_},
                    algs=[alg, enc])
    token.add_recipient(public)
    return token.serialize(compact=True)


def test_encrypted_request_object_to_the_realm_key_is_accepted(client, web_app, bob, key, realm):
    generate_key(realm, "RSA-OAEP-256")
    answer = push(client, request=_encrypted(key, realm, alg="RSA-OAEP-256", enc="A128CBC-HS256"))
    assert answer.status_code == 201, answer.content
    page = authorize_with(client, request=_encrypted(key, realm, alg="RSA-OAEP-256"))
    assert "code=" in sign_in(client, page)["Location"]


def test_encrypted_request_object_refusals(client, web_app, key, realm):
    generate_key(realm, "RSA-OAEP")
    assert pushed_error(client, _encrypted(key, realm, kid="unknown-kid")) == {
        "error": "invalid_request_object", "error_description": "No realm key to decrypt the request object"}
    set_attributes(web_app, **{"request.object.encryption.alg": "RSA-OAEP-256"})
    assert pushed_error(client, _encrypted(key, realm))["error_description"] == (
        "Request object encrypted with different algorithm than client requested")
    assert pushed_error(client, request_object(key))["error_description"] == "Request object not encrypted"
    set_attributes(web_app, **{"request.object.encryption.alg": "", "request.object.encryption.enc": ""})
    assert push(client, request=_encrypted(key, realm)).status_code == 201


def test_encrypted_request_object_without_realm_keys_is_refused(client, web_app, key, realm):
    from jwcrypto import jwe
    recipient = jwk.JWK.generate(kty="RSA", size=2048)
    token = jwe.JWE(request_object(key).encode(), protected={"alg": "RSA-OAEP", "enc": "A256GCM", "cty": "JWT"})
    token.add_recipient(recipient)
    assert pushed_error(client, token.serialize(compact=True)) == {
        "error": "invalid_request_object", "error_description": "No realm key to decrypt the request object"}


def test_request_and_request_uri_together_are_refused(client, web_app, key):
    page = authorize_with(client, request=request_object(key), request_uri="https://app.example/ro")
    assert page.status_code == 400


class ObjectServer:
    """A loopback server that serves ``token`` at any path and counts the requests."""

    def __init__(self):
        self.token, self.hits = "", 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                server.hits += 1
                body = server.token.encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/oauth-authz-req+jwt")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def object_server():
    server = ObjectServer()
    yield server
    server.close()


def test_request_uri_from_the_allowlist_is_fetched(client, web_app, bob, key, object_server, outbound_loopback):
    set_attributes(web_app, **{"request.uris": f"https://unused.example/*##{object_server.url}/ro/*"})
    object_server.token = request_object(key, state="by-reference")
    page = authorize_with(client, request_uri=f"{object_server.url}/ro/1")
    assert object_server.hits == 1
    assert "state=by-reference" in sign_in(client, page)["Location"]


def test_request_uri_not_in_the_allowlist_is_never_fetched(client, web_app, key, object_server, outbound_loopback):
    set_attributes(web_app, **{"request.uris": f"{object_server.url}/ro/*"})
    object_server.token = request_object(key)
    page = authorize_with(client, request_uri=f"{object_server.url}/elsewhere")
    assert page.status_code == 400 and object_server.hits == 0
    set_attributes(web_app, **{"request.uris": ""})
    assert authorize_with(client, request_uri=f"{object_server.url}/ro/1").status_code == 400
    assert object_server.hits == 0
    assert Event.objects.filter(type="LOGIN_ERROR", error="invalid_request_uri").exists()


def test_request_uri_to_a_private_address_is_refused_by_the_ssrf_guard(client, settings, web_app, key,
                                                                       object_server):
    # Production's outbound rules (no loopback allowance): registered, but never called.
    settings.IDP_OUTBOUND_ALLOW_HTTP = True
    set_attributes(web_app, **{"request.uris": f"{object_server.url}/ro/*"})
    object_server.token = request_object(key)
    page = authorize_with(client, request_uri=f"{object_server.url}/ro/1")
    assert page.status_code == 400 and object_server.hits == 0
    assert Event.objects.filter(type="LOGIN_ERROR", error="invalid_request_uri").exists()


def test_request_object_of_a_push_redirects_to_its_own_redirect_uri(client, web_app, bob, key):
    answer = push(client, request=request_object(key), redirect_uri="https://evil.example/cb")
    # The object's redirect_uri (registered) wins over the form's.
    assert answer.status_code == 201
    done = sign_in(client, authorize_with(client, request_uri=answer.json()["request_uri"]))
    assert done["Location"].startswith(REDIRECT)
