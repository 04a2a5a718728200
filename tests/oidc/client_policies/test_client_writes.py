"""Client REGISTER and UPDATE under a FAPI 2 profile (Admin API and dynamic registration): the
profile's auto-configuration applied, a client breaking a rule it does not auto-configure refused
with Keycloak's ``invalid_client_metadata``."""
import pytest

from realms.models import Client
from tests.realms.test_admin_rest_api import PASSWORD, acme, master_api, realm_admin  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db
DPOP_POLICY = {"policies": [{"name": "fapi", "enabled": True, "conditions": [{"condition": "any-client"}],
                             "profiles": ["fapi-2-dpop-security-profile"]}]}


def test_admin_api_create_is_auto_configured(master_api, acme):  # noqa: F811
    assert master_api("put", "acme/client-policies/policies", DPOP_POLICY).status_code == 204
    resp = master_api("post", "acme/clients", {"clientId": "bank", "redirectUris": ["https://bank.example/cb"]})
    assert resp.status_code == 201, resp.content
    bank = Client.objects.get(realm__name="acme", client_id="bank")
    assert bank.client_authenticator_type == "client-jwt"  # the profile's default authenticator
    assert bank.consent_required and not bank.full_scope_allowed
    assert bank.attributes["pkce.code.challenge.method"] == "S256"
    assert bank.attributes["dpop.bound.access.tokens"] == "true"
    for name in ("access.token.signed.response.alg", "id.token.signed.response.alg", "user.info.response.signature.alg",
                 "request.object.signature.alg", "token.endpoint.auth.signing.alg"):
        assert bank.attributes[name] == "PS256", name  # the profile's default algorithm


@pytest.mark.parametrize(("body", "error", "description"), [
    ({"clientAuthenticatorType": "client-secret"}, "invalid_client_metadata",
     "Invalid client metadata: token_endpoint_auth_method"),
    ({"redirectUris": ["http://bank.example/cb"]}, "invalid_client_metadata", "Invalid redirectUris"),
    ({"rootUrl": "https://*.bank.example"}, "invalid_client_metadata", "Invalid rootUrl"),
    ({"attributes": {"id.token.signed.response.alg": "RS256"}}, "invalid_request", "not allowed signature algorithm."),
    ({"attributes": {"access.token.signed.response.alg": "EdDSA"}}, "invalid_request",
     "not allowed signature algorithm."),
    ({"consentRequired": False}, None, None),  # auto-configured: consent becomes required
])
def test_admin_api_refusals(master_api, acme, body, error, description):  # noqa: F811
    assert master_api("put", "acme/client-policies/policies", DPOP_POLICY).status_code == 204
    resp = master_api("post", "acme/clients", {"clientId": "bank", "redirectUris": ["https://bank.example/cb"],
                                               **body})
    if error is None:
        assert resp.status_code == 201
        return
    assert resp.status_code == 400
    assert resp.json() == {"error": error, "error_description": description}
    assert not Client.objects.filter(realm__name="acme", client_id="bank").exists()


def test_admin_api_update_refused(master_api, acme):  # noqa: F811
    assert master_api("post", "acme/clients", {"clientId": "old", "redirectUris": ["https://old.example/cb"],
                                               "clientAuthenticatorType": "client-secret"}).status_code == 201
    assert master_api("put", "acme/client-policies/policies", DPOP_POLICY).status_code == 204
    old = Client.objects.get(realm__name="acme", client_id="old")
    resp = master_api("put", f"acme/clients/{old.pk}", {"clientId": "old", "description": "changed",
                                                         "clientAuthenticatorType": "client-secret"})
    assert resp.json() == {"error": "invalid_client_metadata",
                           "error_description": "Invalid client metadata: token_endpoint_auth_method"}
    old.refresh_from_db()
    assert old.description == "" and old.client_authenticator_type == "client-secret"
    # An update that does not name the authenticator gets the profile's default, as in Keycloak.
    assert master_api("put", f"acme/clients/{old.pk}", {"clientId": "old"}).status_code == 204
    old.refresh_from_db()
    assert old.client_authenticator_type == "client-jwt" and old.consent_required


def test_mutual_tls_profile_binds_tokens_to_client_certificates(master_api, acme):  # noqa: F811
    policy = {"policies": [{**DPOP_POLICY["policies"][0], "profiles": ["fapi-2-security-profile"]}]}
    assert master_api("put", "acme/client-policies/policies", policy).status_code == 204
    resp = master_api("post", "acme/clients", {"clientId": "bank", "redirectUris": ["https://bank.example/cb"]})
    assert resp.status_code == 201, resp.content
    bank = Client.objects.get(realm=acme, client_id="bank")
    assert bank.attributes["tls.client.certificate.bound.access.tokens"] == "true"


def test_dynamic_registration(master_api, acme):  # noqa: F811
    from tests.oidc.registration.conftest import OIDC, call, initial_token

    policy = {"policies": [{**DPOP_POLICY["policies"][0], "conditions": [
        {"condition": "client-updater-context", "configuration": {"update-client-source": ["ByInitialAccessToken"]}}]}]}
    assert master_api("put", "acme/client-policies/policies", policy).status_code == 204
    # No token_endpoint_auth_method: the profile's default authenticator, private_key_jwt.
    resp = call("post", acme, OIDC, {"redirect_uris": ["https://bank.example/cb"], "jwks": {"keys": []}},
                bearer=initial_token(master_api, acme))
    assert resp.status_code == 201, resp.content
    assert resp.json()["token_endpoint_auth_method"] == "private_key_jwt"
    assert Client.objects.get(realm__name="acme", client_id=resp.json()["client_id"]).consent_required
    resp = call("post", acme, OIDC, {"redirect_uris": ["https://bank.example/cb"],
                                     "token_endpoint_auth_method": "client_secret_basic"},
                bearer=initial_token(master_api, acme))
    assert resp.status_code == 400
    assert resp.json() == {"error": "invalid_client_metadata",
                           "error_description": "Invalid client metadata: token_endpoint_auth_method"}
