"""What binds and configures pushed requests and request objects takes effect: a DPoP proof at the
push binds the code (RFC 9449 §10.1), the console's switches save the attributes the endpoints
read, an import and the Admin API refuse values the server cannot honour, discovery says what is
served."""
import pytest
from django.test import Client as HttpClient

from oidc import request_object
from realms.data.keys import generate_key
from realms.models import Client
from realms.representation import RepresentationError, import_realm
from tests.oidc.dpop.conftest import Prover
from tests.realms.test_admin import errors_of, submit
from tests.realms.test_admin_rest_api import master_api  # noqa: F401 (fixture)
from tests.realms.test_console import acme, console, master  # noqa: F401 (fixtures)
from tests.realms.test_console_forms import change_url

from .conftest import AUTH, PAR, PARAMS, SECRET, code_of, push, redeem, sign_in

TOKEN_URL = "http://testserver/realms/acme/protocol/openid-connect/token"
PAR_URL = "http://testserver" + PAR


def test_dpop_proof_at_the_push_binds_the_code(client, web_app, bob):
    prover = Prover()
    answer = client.post(PAR, {"client_id": "web-app", "client_secret": SECRET, **PARAMS},
                         HTTP_DPOP=prover.proof("POST", PAR_URL))
    assert answer.status_code == 201, answer.content
    code = code_of(sign_in(client, client.get(AUTH, {"client_id": "web-app",
                                                      "request_uri": answer.json()["request_uri"]})))
    other = redeem(client, code, HTTP_DPOP=Prover().proof("POST", TOKEN_URL))
    assert other.status_code == 400 and other.json()["error"] == "invalid_grant"

    answer = client.post(PAR, {"client_id": "web-app", "client_secret": SECRET, **PARAMS},
                         HTTP_DPOP=prover.proof("POST", PAR_URL))
    code = code_of(sign_in(client, client.get(AUTH, {"client_id": "web-app",
                                                      "request_uri": answer.json()["request_uri"]})))
    tokens = redeem(client, code, HTTP_DPOP=prover.proof("POST", TOKEN_URL))
    assert tokens.status_code == 200, tokens.content
    assert tokens.json()["token_type"] == "DPoP"


def test_dpop_proof_and_dpop_jkt_must_agree(client, web_app):
    prover = Prover()
    answer = client.post(PAR, {"client_id": "web-app", "client_secret": SECRET, **PARAMS, "dpop_jkt": "B" * 43},
                         HTTP_DPOP=prover.proof("POST", PAR_URL))
    assert answer.json() == {"error": "invalid_request",
                             "error_description": "DPoP Proof public key thumbprint does not match dpop_jkt."}
    answer = client.post(PAR, {"client_id": "web-app", "client_secret": SECRET, **PARAMS},
                         HTTP_DPOP=prover.proof("GET", PAR_URL))
    assert answer.status_code == 400 and answer.json()["error"] == "invalid_dpop_proof"


def test_dpop_jkt_at_the_authorization_endpoint_binds_the_code(client, web_app, bob):
    prover = Prover()
    code = code_of(sign_in(client, client.get(AUTH, {"client_id": "web-app", **PARAMS, "dpop_jkt": prover.jkt})))
    assert redeem(client, code).json()["error"] == "invalid_grant"
    code = code_of(sign_in(client, client.get(AUTH, {"client_id": "web-app", **PARAMS, "dpop_jkt": prover.jkt})))
    assert redeem(client, code, HTTP_DPOP=prover.proof("POST", TOKEN_URL)).status_code == 200


@pytest.mark.django_db
@pytest.mark.usefixtures("fresh_caches")
def test_console_saves_the_attributes_the_endpoints_read(console, acme):  # noqa: F811
    app = Client(realm=acme, client_id="web", redirect_uris=["https://app.example/cb"])
    app.set_secret("web-secret-" + "x" * 20)
    app.save()
    page = console.get(change_url(app)).content.decode()
    for label in ("Pushed authorization request required", "Request object required",
                  "Request object signature algorithm", "Valid request URIs"):
        assert label in page
    response = submit(console, change_url(app), "client_form", {
        "par_required": "on", "request_object_required": "request only", "request_object_signature_alg": "ES256",
        "request_uris": "https://app.example/ro/*\nhttps://app.example/other"})
    assert not errors_of(response), errors_of(response)
    app.refresh_from_db()
    assert app.attributes[request_object.PAR_REQUIRED] == "true"
    assert app.attributes[request_object.REQUIRED] == "request only"
    assert app.attributes[request_object.SIGNATURE_ALG] == "ES256"
    assert app.attributes[request_object.REQUEST_URIS] == "https://app.example/ro/*##https://app.example/other"
    http = HttpClient()
    refused = http.get(f"/realms/{acme.name}/protocol/openid-connect/auth",
                       {**PARAMS, "client_id": "web", "request_uri": "https://app.example/elsewhere"})
    assert refused.status_code == 400  # request only: a request_uri is not enough

    response = submit(console, change_url(app), "client_form", {
        "par_required": None, "request_object_required": "", "request_object_signature_alg": "",
        "request_uris": ""})
    assert not errors_of(response), errors_of(response)
    app.refresh_from_db()
    assert app.attributes[request_object.PAR_REQUIRED] == "false"
    assert request_object.REQUIRED not in app.attributes and request_object.SIGNATURE_ALG not in app.attributes
    answer = http.get(f"/realms/{acme.name}/protocol/openid-connect/auth", {**PARAMS, "client_id": "web"})
    assert answer.status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize(("name", "value"), [
    ("request.object.required", "always"), ("request.object.signature.alg", "HS1"),
    ("request.object.encryption.alg", "RSA1_5"), ("request.object.encryption.enc", "A128KW"),
    ("require.pushed.authorization.requests", "yes"),
])
def test_import_refuses_values_the_server_cannot_honour(name, value):
    with pytest.raises(RepresentationError, match=f"Unsupported value of {name}"):
        import_realm({"realm": "bad-attrs", "enabled": True,
                      "clients": [{"clientId": "app", "attributes": {name: value}}]})


@pytest.mark.django_db
def test_import_keeps_keycloak_values():
    import_realm({"realm": "good-attrs", "enabled": True, "clients": [{"clientId": "app", "attributes": {
        "request.object.required": "request or request_uri", "request.object.signature.alg": "any",
        "request.object.encryption.alg": "", "require.pushed.authorization.requests": "true", "request.uris": "https://app.example/*"}}]})
    attributes = Client.objects.get(realm__name="good-attrs", client_id="app").attributes
    assert attributes["request.object.required"] == "request or request_uri"


@pytest.mark.django_db
def test_admin_api_refuses_an_unknown_request_object_required(master_api, acme):  # noqa: F811
    resp = master_api("post", "acme/clients", {"clientId": "x", "attributes": {"request.object.required": "maybe"}})
    assert resp.status_code == 400
    assert "Unsupported value of request.object.required" in resp.json()["errorMessage"]
    resp = master_api("post", "acme/clients", {"clientId": "x", "attributes": {"request.object.required": "request only"}})
    assert resp.status_code == 201


def test_discovery_lists_what_is_served(client, realm):
    doc = client.get("/realms/acme/.well-known/openid-configuration").json()
    assert doc["request_parameter_supported"] is True and doc["request_uri_parameter_supported"] is True
    assert doc["require_request_uri_registration"] is True
    assert "ES256" in doc["request_object_signing_alg_values_supported"]
    assert "none" in doc["request_object_signing_alg_values_supported"]
    # Encrypted request objects are served only with a realm encryption key: listed then.
    assert "request_object_encryption_alg_values_supported" not in doc
    assert "request_object_encryption_enc_values_supported" not in doc
    generate_key(realm, "RSA-OAEP-256")
    doc = client.get("/realms/acme/.well-known/openid-configuration").json()
    assert doc["request_object_encryption_alg_values_supported"] == ["RSA-OAEP-256"]
    assert "A256GCM" in doc["request_object_encryption_enc_values_supported"]


@pytest.mark.django_db
@pytest.mark.usefixtures("fresh_caches")
def test_lifespan_realm_attribute_is_imported_exported_and_served():
    from realms.representation import export_realm
    realm = import_realm({"realm": "lifespan", "enabled": True, "attributes": {"parRequestUriLifespan": "90"},
                          "clients": [{"clientId": "app", "secret": "app-secret-" + "x" * 20,
                                       "redirectUris": ["https://app.example/cb"]}]}).realm
    assert export_realm(realm)["attributes"]["parRequestUriLifespan"] == "90"
    answer = HttpClient().post("/realms/lifespan/protocol/openid-connect/ext/par/request", {
        "client_id": "app", "client_secret": "app-secret-" + "x" * 20, "response_type": "code",
        "redirect_uri": "https://app.example/cb", "scope": "openid"})
    assert answer.status_code == 201, answer.content
    assert answer.json()["expires_in"] == 90
