"""RFC 7591 registration and RFC 7592 management on ``clients-registrations/openid-connect`` as
Keycloak answers them: the metadata converted to the client's settings and back, the initial
access token (count, expiry), the registration access token (rotation, replay refused), bearer
tokens of realm admins, Keycloak's errors and events, and the feature switch."""
import base64
import json
import time

import pytest
from django.test import Client as HttpClient
from jwcrypto import jwk

from oidc.models import ClientInitialAccess
from oidc.registration.auth import initial_access_token
from realms.models import Client, Event

from .conftest import OIDC, call, initial_token, realm_admin, token

pytestmark = pytest.mark.django_db
REDIRECT = "https://app.example/cb"


def claims(jwt):
    part = jwt.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def register(admin, realm, body=None, **kw):
    resp = call("post", realm, OIDC, body or {"redirect_uris": [REDIRECT]}, bearer=initial_token(admin, realm, **kw))
    assert resp.status_code == 201, resp.content
    return resp


def events(realm, type_):
    return list(Event.objects.filter(realm=realm, type=type_).order_by("time"))


def test_registration_answers_the_metadata_and_creates_the_client(admin, acme):
    body = {
        "redirect_uris": [REDIRECT], "client_name": "My App", "client_uri": "https://app.example/",
        "grant_types": ["authorization_code", "client_credentials", "refresh_token"],
        "response_types": ["code"], "token_endpoint_auth_method": "client_secret_post",
        "logo_uri": "https://app.example/logo.png", "policy_uri": "https://app.example/policy",
        "tos_uri": "https://app.example/tos", "contacts": ["ops@app.example", "dev@app.example"],
        "post_logout_redirect_uris": ["https://app.example/bye"],
        "backchannel_logout_uri": "https://app.example/bcl", "backchannel_logout_session_required": False,
    }
    resp = register(admin, acme, body)
    out = resp.json()
    client = Client.objects.get(realm=acme, client_id=out["client_id"])
    assert resp["Location"] == out["registration_client_uri"] == (
        f"http://testserver/realms/acme/clients-registrations/openid-connect/{client.client_id}")
    assert resp["Cache-Control"] == "no-store"
    assert client.check_secret(out["client_secret"]) and out["client_secret_expires_at"] == 0
    assert out["token_endpoint_auth_method"] == "client_secret_basic"  # Keycloak names the authenticator's first
    assert out["client_name"] == client.name == "My App" and client.base_url == "https://app.example/"
    assert set(out["grant_types"]) == {"authorization_code", "client_credentials", "refresh_token"}
    assert out["response_types"] == ["code", "none"]
    assert client.service_accounts_enabled and client.standard_flow_enabled and not client.implicit_flow_enabled
    assert client.attributes["logoUri"] == "https://app.example/logo.png"
    assert client.attributes["contacts"] == "ops@app.example##dev@app.example"
    assert client.attributes["post.logout.redirect.uris"] == "https://app.example/bye"
    assert client.attributes["backchannel.logout.url"] == "https://app.example/bcl"
    assert client.attributes["backchannel.logout.session.required"] == "false"
    assert out["contacts"] == body["contacts"] and out["tos_uri"] == body["tos_uri"]
    assert isinstance(out["client_id_issued_at"], int)
    rat = claims(out["registration_access_token"])
    assert rat["typ"] == "RegistrationAccessToken" and rat["registration_auth"] == "authenticated"
    assert "exp" not in rat and rat["iss"] == rat["aud"] == "http://testserver/realms/acme"
    # only the digest of the token's id is kept on the client
    assert client.registration_access_token and rat["jti"] not in client.registration_access_token
    [event] = events(acme, "CLIENT_REGISTER")
    assert event.client_id == client.client_id and event.ip_address == "127.0.0.1"


def test_the_registered_client_gets_tokens(admin, acme):
    out = register(admin, acme, {"grant_types": ["client_credentials"], "redirect_uris": []}).json()
    resp = HttpClient().post("/realms/acme/protocol/openid-connect/token", {
        "grant_type": "client_credentials", "client_id": out["client_id"], "client_secret": out["client_secret"]})
    assert resp.status_code == 200, resp.content
    assert resp.json()["access_token"]


def test_public_client_jwks_and_private_key_jwt(admin, acme):
    out = register(admin, acme, {"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"}).json()
    assert out["token_endpoint_auth_method"] == "none" and "client_secret" not in out
    assert Client.objects.get(realm=acme, client_id=out["client_id"]).public_client
    key = jwk.JWK.generate(kty="EC", crv="P-256", kid="k1")
    jwks = {"keys": [json.loads(key.export_public())]}
    out = register(admin, acme, {"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "private_key_jwt",
                                 "jwks": jwks}).json()
    client = Client.objects.get(realm=acme, client_id=out["client_id"])
    assert client.client_authenticator_type == "client-jwt" and json.loads(client.attributes["jwks.string"]) == jwks
    assert out["jwks"] == jwks and out["token_endpoint_auth_method"] == "private_key_jwt"
    out = register(admin, acme, {"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "private_key_jwt",
                                 "jwks_uri": "https://app.example/jwks"}).json()
    assert out["jwks_uri"] == "https://app.example/jwks"


@pytest.mark.parametrize("body, error, description", [
    ({"client_id": "mine", "redirect_uris": [REDIRECT]}, "invalid_client_metadata", "Client Identifier included"),
    ({"redirect_uris": ["https://app.example/cb#frag"]}, "invalid_redirect_uri",
     "Redirect URIs must not contain an URI fragment"),
    ({"redirect_uris": ["not a uri"]}, "invalid_redirect_uri", "A redirect URI is not a valid URI"),
    ({"redirect_uris": ["javascript:alert(1)"]}, "invalid_redirect_uri", "A redirect URI is not a valid URI"),
    ({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "magic"}, "invalid_client_metadata",
     "Client metadata invalid"),
    ({"redirect_uris": [REDIRECT], "grant_types": ["made_up"]}, "invalid_client_metadata", "Client metadata invalid"),
    ({"redirect_uris": [REDIRECT], "response_types": ["token"]}, "invalid_client_metadata", "Client metadata invalid"),
    ({"redirect_uris": [REDIRECT], "response_types": ["code none"]}, "invalid_client_metadata",
     "Client metadata invalid"),
    ({"redirect_uris": [REDIRECT], "jwks": {"keys": []}, "jwks_uri": "https://app.example/jwks"},
     "invalid_client_metadata", "Client metadata invalid"),
    ({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "private_key_jwt"}, "invalid_client_metadata",
     "Client metadata invalid"),
    ({"redirect_uris": "https://app.example/cb"}, "invalid_client_metadata", "Client metadata invalid"),
    ({"redirect_uris": [REDIRECT], "logo_uri": "nope"}, "invalid_client_metadata", "Logo URL is not a valid URL"),
    ({"redirect_uris": [REDIRECT], "backchannel_token_delivery_mode": "push"}, "invalid_client_metadata",
     "Client metadata invalid"),
    ({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "tls_client_auth"}, "invalid_client_metadata",
     "Client metadata invalid"),
    ({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "self_signed_tls_client_auth"},
     "invalid_client_metadata", "Client metadata invalid"),
    # Asked for and not served: refused, never a client given bearer or clear-text tokens it did not ask for.
    ({"redirect_uris": [REDIRECT], "id_token_encrypted_response_alg": "RSA1_5"}, "invalid_client_metadata",
     "attributes: Unsupported value of id.token.encrypted.response.alg: 'RSA1_5'; one of: RSA-OAEP, RSA-OAEP-256, "
     "ECDH-ES, ECDH-ES+A128KW, ECDH-ES+A192KW, ECDH-ES+A256KW"),
    ({"redirect_uris": [REDIRECT], "id_token_signed_response_alg": "none"}, "invalid_client_metadata",
     "attributes: Unsupported value of id.token.signed.response.alg: 'none'; one of: RS256, RS384, RS512, PS256, "
     "PS384, PS512, ES256, ES384, ES512, EdDSA, HS256, HS384, HS512"),
])
def test_invalid_metadata_is_refused_and_spends_nothing(admin, acme, body, error, description):
    iat = initial_token(admin, acme)
    before = Client.objects.filter(realm=acme).count()
    resp = call("post", acme, OIDC, body, bearer=iat)
    assert resp.status_code == 400
    assert resp.json() == {"error": error, "error_description": description}
    assert Client.objects.filter(realm=acme).count() == before
    assert ClientInitialAccess.objects.get(realm=acme).remaining_count == 1
    [event] = events(acme, "CLIENT_REGISTER_ERROR")
    assert event.error == error


def test_a_body_that_is_not_a_json_object_is_invalid_metadata(admin, acme):
    resp = HttpClient().post("/realms/acme/clients-registrations/openid-connect", "[1]",
                             content_type="application/json", HTTP_AUTHORIZATION="Bearer " + initial_token(admin, acme))
    assert resp.status_code == 400 and resp.json()["error"] == "invalid_client_metadata"


def test_read_update_delete_with_the_registration_access_token_rotating(admin, acme):
    out = register(admin, acme).json()
    first = out["registration_access_token"]
    got = call("get", acme, OIDC, bearer=first, client_id=out["client_id"])
    assert got.status_code == 200 and got.json()["client_secret"] == out["client_secret"]
    assert got.json()["registration_access_token"] == first  # a read does not rotate

    updated = call("put", acme, OIDC, {**out, "client_name": "Renamed", "redirect_uris": ["https://app.example/2"]},
                   bearer=first, client_id=out["client_id"])
    assert updated.status_code == 200, updated.content
    second = updated.json()["registration_access_token"]
    assert second != first and updated.json()["client_name"] == "Renamed"
    client = Client.objects.get(realm=acme, client_id=out["client_id"])
    assert client.name == "Renamed" and client.redirect_uris == ["https://app.example/2"]

    for method in ("get", "put", "delete"):  # the replaced token is dead for every operation
        replay = call(method, acme, OIDC, out if method == "put" else None, bearer=first, client_id=out["client_id"])
        assert replay.status_code == 401 and replay.json()["error"] == "invalid_token"
    assert events(acme, "CLIENT_INFO_ERROR")[0].error == "invalid_token"

    modified = call("put", acme, OIDC, {**out, "client_id": "other"}, bearer=second, client_id=out["client_id"])
    assert modified.json() == {"error": "invalid_client_metadata", "error_description": "Client Identifier modified"}

    other = register(admin, acme).json()  # one client's token is no key to another
    assert call("get", acme, OIDC, bearer=second, client_id=other["client_id"]).status_code == 401

    assert call("delete", acme, OIDC, bearer=second, client_id=out["client_id"]).status_code == 204
    assert not Client.objects.filter(realm=acme, client_id=out["client_id"]).exists()
    assert [e.type for e in Event.objects.filter(realm=acme, client_id=out["client_id"]).order_by("time")] == [
        "CLIENT_REGISTER", "CLIENT_INFO", "CLIENT_UPDATE", "CLIENT_INFO_ERROR", "CLIENT_UPDATE_ERROR",
        "CLIENT_DELETE_ERROR", "CLIENT_UPDATE_ERROR", "CLIENT_DELETE"]


def test_initial_access_token_count_is_spent_once_per_registration(admin, acme):
    iat = initial_token(admin, acme, count=2)
    for _ in range(2):
        assert call("post", acme, OIDC, {"redirect_uris": [REDIRECT]}, bearer=iat).status_code == 201
    resp = call("post", acme, OIDC, {"redirect_uris": [REDIRECT]}, bearer=iat)
    assert resp.status_code == 401
    assert resp.json() == {"error": "invalid_token", "error_description": "No remaining count on initial access token"}
    assert ClientInitialAccess.objects.get(realm=acme).remaining_count == 0


def test_initial_access_token_expiry(admin, acme):
    iat = initial_token(admin, acme, expiration=60)
    row = ClientInitialAccess.objects.get(realm=acme)
    assert claims(iat)["exp"] == row.timestamp + 60 and claims(iat)["typ"] == "InitialAccessToken"
    ClientInitialAccess.objects.filter(realm=acme).update(timestamp=int(time.time()) - 120)
    resp = call("post", acme, OIDC, {"redirect_uris": [REDIRECT]}, bearer=iat)
    assert resp.json() == {"error": "invalid_token", "error_description": "Expired initial access token"}
    # a token whose own exp has passed fails its verification first
    ClientInitialAccess.objects.filter(realm=acme).update(timestamp=int(time.time()), expiration=1)
    row = ClientInitialAccess.objects.get(realm=acme)
    row.timestamp -= 10
    stale = initial_access_token(acme, "http://testserver/realms/acme", row)
    assert call("post", acme, OIDC, {"redirect_uris": [REDIRECT]}, bearer=stale).json()["error_description"] == (
        "Failed decode token")


def test_tokens_that_are_not_registration_tokens(admin, acme):
    iat = initial_token(admin, acme)
    ClientInitialAccess.objects.filter(realm=acme).delete()
    resp = call("post", acme, OIDC, {"redirect_uris": [REDIRECT]}, bearer=iat)
    assert resp.json() == {"error": "invalid_token", "error_description": "Initial Access Token not found"}
    assert call("post", acme, OIDC, {"redirect_uris": [REDIRECT]}, bearer="x.y.z").json()["error_description"] == (
        "Failed decode token")
    realm_admin(acme, "ann", "manage-clients")
    refresh = HttpClient().post("/realms/acme/protocol/openid-connect/token", {
        "grant_type": "password", "client_id": "admin-cli", "username": "ann", "password": "api-admin-password-1",
    }).json()["refresh_token"]
    resp = call("post", acme, OIDC, {"redirect_uris": [REDIRECT]}, bearer=refresh)
    assert resp.json() == {"error": "invalid_token", "error_description": "Invalid type of token"}
    # an initial access token reads nothing
    out = register(admin, acme).json()
    resp = call("get", acme, OIDC, bearer=initial_token(admin, acme), client_id=out["client_id"])
    assert resp.json() == {"error": "invalid_token", "error_description": "Not initial access token allowed"}
    # a token of another realm (the master admin's) is not this realm's
    assert call("post", acme, OIDC, {"redirect_uris": [REDIRECT]},
                bearer=token("master", "api-root")).json()["error_description"] == "Failed decode token"


def test_bearer_tokens_of_realm_admins(acme):
    creator = token_of(acme, "creator", "create-client")
    resp = call("post", acme, OIDC, {"redirect_uris": [REDIRECT]}, bearer=creator)
    assert resp.status_code == 201
    out = resp.json()
    assert claims(out["registration_access_token"])["registration_auth"] == "authenticated"
    # create-client may create, not read or change
    assert call("get", acme, OIDC, bearer=creator, client_id=out["client_id"]).status_code == 403
    viewer = token_of(acme, "viewer", "view-clients")
    assert call("get", acme, OIDC, bearer=viewer, client_id=out["client_id"]).status_code == 200
    assert call("get", acme, OIDC, bearer=viewer, client_id="nope").json() == {
        "error": "invalid_request", "error_description": "Client not found"}
    assert call("delete", acme, OIDC, bearer=viewer, client_id=out["client_id"]).status_code == 403
    plain = token_of(acme, "plain")
    resp = call("post", acme, OIDC, {"redirect_uris": [REDIRECT]}, bearer=plain)
    assert resp.status_code == 403 and resp.json() == {"error": "insufficient_scope", "error_description": "Forbidden"}
    manager = token_of(acme, "manager", "manage-clients")
    assert call("put", acme, OIDC, {**out, "client_name": "M"}, bearer=manager, client_id=out["client_id"]).json()[
        "client_name"] == "M"
    assert call("delete", acme, OIDC, bearer=manager, client_id=out["client_id"]).status_code == 204


def token_of(realm, username, *roles):
    realm_admin(realm, username, *roles)
    return token(realm.name, username)


def test_default_provider_speaks_client_representation(admin, acme):
    iat = initial_token(admin, acme)
    resp = call("post", acme, "default", {"clientId": "made-by-dcr", "redirectUris": [REDIRECT],
                                          "registrationAccessToken": "forged", "id": "forged-id"}, bearer=iat)
    assert resp.status_code == 201, resp.content
    rep = resp.json()
    assert resp["Location"] == "http://testserver/realms/acme/clients-registrations/default/made-by-dcr"
    assert rep["clientId"] == "made-by-dcr" and rep["secret"] and rep["id"] != "forged-id"
    assert claims(rep["registrationAccessToken"])["typ"] == "RegistrationAccessToken"
    again = call("post", acme, "default", {"clientId": "made-by-dcr"}, bearer=initial_token(admin, acme))
    assert again.json() == {"error": "invalid_client_metadata", "error_description": "Client Identifier in use"}
    got = call("get", acme, "default", bearer=rep["registrationAccessToken"], client_id="made-by-dcr").json()
    assert got["registrationAccessToken"] == rep["registrationAccessToken"] and got["secret"] == rep["secret"]
    put = call("put", acme, "default", {**got, "description": "changed"}, bearer=got["registrationAccessToken"],
               client_id="made-by-dcr")
    assert put.status_code == 200 and put.json()["description"] == "changed"
    assert put.json()["registrationAccessToken"] != got["registrationAccessToken"]
    assert call("delete", acme, "default", bearer=put.json()["registrationAccessToken"],
                client_id="made-by-dcr").status_code == 204


def test_an_openid_endpoint_refuses_a_saml_client(acme):
    Client.objects.create(realm=acme, client_id="urn:sp", protocol="saml")
    manager = token_of(acme, "manager", "manage-clients")
    resp = call("get", acme, OIDC, bearer=manager, client_id="urn:sp")
    assert resp.status_code == 400
    assert resp.json() == {"error": "invalid_client", "error_description": "Wrong client protocol."}


def test_feature_off_the_service_does_not_exist(admin, acme, settings):
    iat = initial_token(admin, acme)
    settings.IDP_FEATURES_DISABLED = "client-registration"
    assert call("post", acme, OIDC, {"redirect_uris": [REDIRECT]}, bearer=iat).status_code == 404
    assert call("post", acme, "default", {"clientId": "x"}, bearer=iat).status_code == 404
    doc = HttpClient().get("/realms/acme/.well-known/openid-configuration").json()
    assert "registration_endpoint" not in doc
    settings.IDP_FEATURES_DISABLED = ""
    doc = HttpClient().get("/realms/acme/.well-known/openid-configuration").json()
    assert doc["registration_endpoint"] == "http://testserver/realms/acme/clients-registrations/openid-connect"


def test_unknown_provider_and_methods(admin, acme):
    assert call("post", acme, "install", {}).status_code == 404
    assert call("get", acme, OIDC).status_code == 405
    assert call("post", acme, OIDC, {}, client_id="x").status_code == 405
