"""Pushed authorization requests (RFC 9126) at Keycloak's ext/par/request: the answer, each
error of §2.3, single use, expiry, the client binding and the per-client requirement."""
import time_machine
from django.utils import timezone

from oidc.models import PushedAuthorization
from realms.models import Event

from .conftest import AUTH, PAR, PARAMS, REDIRECT, code_of, push, redeem, set_attributes, sign_in


def authorize_pushed(http, request_uri, client_id="web-app"):
    return http.get(AUTH, {"client_id": client_id, "request_uri": request_uri})


def test_push_answers_201_with_a_request_uri_and_keycloak_lifespan(client, web_app, bob):
    answer = push(client)
    assert answer.status_code == 201, answer.content
    body = answer.json()
    assert body["expires_in"] == 60
    assert body["request_uri"].startswith("urn:ietf:params:oauth:request_uri:")
    assert answer["Cache-Control"] == "no-store"
    # The whole flow: the pushed request signs the user in and its code is redeemed.
    done = sign_in(client, authorize_pushed(client, body["request_uri"]))
    tokens = redeem(client, code_of(done))
    assert tokens.status_code == 200, tokens.content
    assert Event.objects.filter(type="PUSHED_AUTHORIZATION_REQUEST", client_id="web-app").exists()


def test_realm_lifespan_attribute_sets_expires_in_and_expiry(client, realm, web_app, bob):
    realm.attributes = {**realm.attributes, "parRequestUriLifespan": "5"}
    realm.save()
    request_uri = push(client).json()["request_uri"]
    row = PushedAuthorization.objects.get()
    assert 4 <= (row.expires_at - timezone.now()).total_seconds() <= 5
    with time_machine.travel(timezone.now() + timezone.timedelta(seconds=6)):
        page = authorize_pushed(client, request_uri)
    assert page.status_code == 400 and b"request_uri" in page.content


def test_request_uri_is_single_use(client, web_app, bob):
    request_uri = push(client).json()["request_uri"]
    assert authorize_pushed(client, request_uri).status_code == 200
    again = authorize_pushed(client, request_uri)
    assert again.status_code == 400 and b"Invalid parameter: request_uri" in again.content


def test_request_uri_is_bound_to_the_client_that_pushed_it(client, realm, web_app, bob):
    from tests.oidc.browser.conftest import make_client
    make_client(realm, "other", redirect_uris=[REDIRECT])
    request_uri = push(client).json()["request_uri"]
    assert authorize_pushed(client, request_uri, client_id="other").status_code == 400
    # Another client's attempt leaves it to its own client.
    assert authorize_pushed(client, request_uri).status_code == 200


def test_unknown_request_uri_is_refused(client, web_app):
    page = authorize_pushed(client, "urn:ietf:params:oauth:request_uri:nope")
    assert page.status_code == 400
    assert Event.objects.filter(type="LOGIN_ERROR", error="invalid_request_uri").exists()


def test_only_pushed_parameters_count(client, web_app, bob):
    request_uri = push(client, state="pushed").json()["request_uri"]
    page = client.get(AUTH, {"client_id": "web-app", "request_uri": request_uri, "state": "forged",
                             "redirect_uri": "https://evil.example/cb"})
    done = sign_in(client, page)
    assert done["Location"].startswith(REDIRECT) and "state=pushed" in done["Location"]


def test_client_authentication_is_required(client, web_app):
    answer = push(client, secret="wrong")
    assert answer.status_code == 401 and answer.json()["error"] == "invalid_client"
    answer = push(client, secret=None)
    assert answer.status_code == 401 and answer.json()["error"] == "invalid_client"
    assert Event.objects.filter(type="PUSHED_AUTHORIZATION_REQUEST_ERROR", error="invalid_client").exists()


def test_public_client_pushes_without_secret(client, realm, bob):
    from tests.oidc.browser.conftest import make_client
    make_client(realm, "spa", public_client=True, redirect_uris=[REDIRECT])
    answer = push(client, client_id="spa", secret=None)
    assert answer.status_code == 201, answer.content


def test_request_uri_inside_a_push_is_refused(client, web_app):
    answer = push(client, request_uri="urn:ietf:params:oauth:request_uri:x")
    assert answer.status_code == 400
    assert answer.json() == {"error": "invalid_request",
                             "error_description": "It is not allowed to include request_uri to PAR."}


def test_bad_redirect_uri_is_invalid_request(client, web_app):
    for redirect in ("https://evil.example/cb", None):
        answer = push(client, redirect_uri=redirect)
        assert answer.status_code == 400
        assert answer.json() == {"error": "invalid_request", "error_description": "Invalid parameter: redirect_uri"}


def test_bad_response_type_and_scope_are_invalid_request(client, web_app):
    answer = push(client, response_type="code banana")
    assert answer.json() == {"error": "invalid_request", "error_description": "Unsupported response type"}
    answer = push(client, scope="openid no-such-scope")
    assert answer.status_code == 400 and answer.json()["error"] == "invalid_request"


def test_pkce_is_checked_at_the_push(client, web_app):
    set_attributes(web_app, **{"pkce.code.challenge.method": "S256"})
    answer = push(client, code_challenge=None, code_challenge_method=None)
    assert answer.status_code == 400
    assert answer.json() == {"error": "invalid_request", "error_description": "Missing parameter: code_challenge"}
    answer = push(client, code_challenge="short")
    assert answer.json()["error_description"] == "Invalid parameter: code_challenge"


def test_standard_flow_disabled_is_unauthorized_client(client, web_app):
    web_app.standard_flow_enabled = False
    web_app.save()
    assert push(client).json()["error"] == "unauthorized_client"


def test_duplicated_parameter_is_refused(client, web_app):
    answer = client.post(PAR, {"client_id": "web-app", "client_secret": "secret-of-web-app", **PARAMS,
                               "state": ["a", "b"]})
    assert answer.status_code == 400 and answer.json()["error"] == "invalid_request"


def test_get_is_not_allowed_and_preflight_answers(client, web_app):
    assert client.get(PAR).status_code == 405
    assert client.options(PAR, HTTP_ORIGIN="https://app.example",
                          HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST").status_code == 200


def test_cors_headers_for_the_clients_web_origin(client, web_app):
    web_app.web_origins = ["https://app.example"]
    web_app.save()
    answer = client.post(PAR, {"client_id": "web-app", "client_secret": "secret-of-web-app", **PARAMS},
                         HTTP_ORIGIN="https://app.example")
    assert answer.status_code == 201
    assert answer["Access-Control-Allow-Origin"] == "https://app.example"
    # A browser client must be able to read a DPoP server nonce (RFC 9449 §8) and a challenge.
    assert set(answer["Access-Control-Expose-Headers"].split(", ")) == {"WWW-Authenticate", "DPoP-Nonce"}


def test_require_pushed_authorization_requests(client, web_app, bob):
    set_attributes(web_app, **{"require.pushed.authorization.requests": "true"})
    refused = client.get(AUTH, {"client_id": "web-app", **PARAMS})
    assert refused.status_code == 302
    location = refused["Location"]
    assert location.startswith(REDIRECT) and "error=invalid_request" in location
    assert "Pushed+Authorization+Request+is+only+allowed." in location
    request_uri = push(client).json()["request_uri"]
    assert authorize_pushed(client, request_uri).status_code == 200
    # Switched off, a plain request is served again.
    set_attributes(web_app, **{"require.pushed.authorization.requests": "false"})
    assert client.get(AUTH, {"client_id": "web-app", **PARAMS}).status_code == 200


def test_dpop_jkt_binds_the_code(client, web_app, bob):
    jkt = "A" * 43
    request_uri = push(client, dpop_jkt=jkt).json()["request_uri"]
    code = code_of(sign_in(client, authorize_pushed(client, request_uri)))
    answer = redeem(client, code)  # no DPoP proof of that key
    assert answer.status_code == 400
    assert answer.json()["error"] == "invalid_grant"


def test_bad_dpop_jkt_is_refused(client, web_app):
    answer = push(client, dpop_jkt="not a thumbprint")
    assert answer.json() == {"error": "invalid_request", "error_description": "Invalid parameter: dpop_jkt"}


def test_discovery_lists_par(client, realm):
    doc = client.get("/realms/acme/.well-known/openid-configuration").json()
    assert doc["pushed_authorization_request_endpoint"] == "http://testserver" + PAR
    assert doc["require_pushed_authorization_requests"] is False
