"""The Admin REST API's identity providers at Keycloak 26's paths and shapes
(``identity-provider/instances``, their mappers and mapper types, ``providers/{id}``,
``import-config``) and a user's ``federated-identity`` links: every write checked with Keycloak's
message, recorded as an admin event, the client secret never answered and sealed at rest, reads
for ``view-identity-providers`` and writes for ``manage-identity-providers`` only."""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection

from realms.brokering.mappers import mapper_types
from realms.brokering.providers import provider_types
from realms.models import (
    Event,
    FederatedIdentity,
    IdentityProvider,
    IdentityProviderMapper,
    OrganizationIdentityProvider,
)
from realms.users import organizations
from realms.users.accounts import create_user

from .test_admin_rest_api import acme, created_id, master_api, realm_admin  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db
DATA = Path(__file__).resolve().parents[1] / "data" / "keycloak-brokering"
MASK = "**********"
BASE = "acme/identity-provider/instances"


def oidc(alias="corp", secret="s3cret-value", **extra):
    """An OpenID Connect provider's representation as the admin console posts it."""
    return {"alias": alias, "displayName": "Corp SSO", "providerId": "oidc", "enabled": True,
            "config": {"clientId": "our-app", "clientSecret": secret, "clientAuthMethod": "client_secret_post",
                       "authorizationUrl": "https://sso.corp.example/authorize",
                       "tokenUrl": "https://sso.corp.example/token", "issuer": "https://sso.corp.example",
                       "jwksUrl": "https://sso.corp.example/jwks", "useJwksUrl": "true",
                       "validateSignature": "true", "syncMode": "IMPORT"}, **extra}


def events(realm, resource_type):
    return list(Event.objects.filter(realm=realm, kind=Event.ADMIN, resource_type=resource_type).order_by("time"))


def stored_config(idp):
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT config FROM {IdentityProvider._meta.db_table} WHERE internal_id = %s",
                       [idp.internal_id])
        raw = cursor.fetchone()[0]
    return json.loads(raw) if isinstance(raw, str) else raw


def test_create_read_update_delete_with_the_secret_masked_and_sealed(master_api, acme):
    resp = master_api("post", BASE, oidc())
    assert created_id(resp) == "corp"
    assert resp["Location"].endswith("/admin/realms/acme/identity-provider/instances/corp")
    idp = IdentityProvider.objects.get(realm=acme, alias="corp")
    assert idp.config["clientSecret"] == "s3cret-value"
    assert stored_config(idp)["clientSecret"].startswith("fernet:")  # sealed at rest
    assert "s3cret-value" not in json.dumps(stored_config(idp))

    rep = master_api("get", f"{BASE}/corp").json()
    assert rep["config"]["clientSecret"] == MASK and "s3cret-value" not in json.dumps(rep)
    assert {k: rep[k] for k in ("alias", "internalId", "providerId", "enabled", "displayName", "trustEmail",
                                "storeToken", "linkOnly", "hideOnLogin", "addReadTokenRoleOnCreate")} == {
        "alias": "corp", "internalId": idp.internal_id, "providerId": "oidc", "enabled": True,
        "displayName": "Corp SSO", "trustEmail": False, "storeToken": False, "linkOnly": False,
        "hideOnLogin": False, "addReadTokenRoleOnCreate": False}
    assert master_api("get", f"{BASE}/{idp.internal_id}").json()["alias"] == "corp"  # by id or alias

    # A PUT carrying the mask keeps the stored secret; another value replaces it.
    rep.update(trustEmail=True, hideOnLogin=True)
    assert master_api("put", f"{BASE}/corp", rep).status_code == 204
    idp.refresh_from_db()
    assert idp.trust_email and idp.hide_on_login and idp.config["clientSecret"] == "s3cret-value"
    rep["config"]["clientSecret"] = "rotated-secret"
    assert master_api("put", f"{BASE}/corp", rep).status_code == 204
    idp.refresh_from_db()
    assert idp.config["clientSecret"] == "rotated-secret"

    recorded = events(acme, "IDENTITY_PROVIDER")
    assert [(e.type, e.resource_path) for e in recorded] == [
        ("CREATE", "identity-provider/instances/corp"), ("UPDATE", "identity-provider/instances/corp"),
        ("UPDATE", "identity-provider/instances/corp")]
    assert all("s3cret-value" not in e.representation and "rotated-secret" not in e.representation
               for e in recorded)
    assert json.loads(recorded[0].representation)["config"]["clientSecret"] == MASK

    assert master_api("delete", f"{BASE}/corp").status_code == 204
    assert not IdentityProvider.objects.filter(realm=acme).exists()
    assert events(acme, "IDENTITY_PROVIDER")[-1].type == "DELETE"
    assert master_api("get", f"{BASE}/corp").json() == {"error": "HTTP 404 Not Found"}
    assert master_api("put", f"{BASE}/corp", oidc()).status_code == 404
    assert master_api("delete", f"{BASE}/corp").status_code == 404


def test_list_search_paging_brief_and_realm_only(master_api, acme):
    for alias in ("alpha", "beta", "alphabet", "gamma"):
        created_id(master_api("post", BASE, oidc(alias)))
    assert [i["alias"] for i in master_api("get", BASE).json()] == ["alpha", "alphabet", "beta", "gamma"]
    assert [i["alias"] for i in master_api("get", BASE, search="alp").json()] == ["alpha", "alphabet"]
    assert [i["alias"] for i in master_api("get", BASE, search="*ph*").json()] == ["alpha", "alphabet"]
    assert [i["alias"] for i in master_api("get", BASE, search='"alpha"').json()] == ["alpha"]
    assert [i["alias"] for i in master_api("get", BASE, first=1, max=2).json()] == ["alphabet", "beta"]
    brief = master_api("get", BASE, briefRepresentation="true", search='"beta"').json()
    assert brief == [{"alias": "beta", "internalId": IdentityProvider.objects.get(alias="beta").internal_id,
                      "providerId": "oidc", "enabled": True, "displayName": "Corp SSO"}]
    full = master_api("get", BASE, search='"beta"').json()[0]
    assert full["config"]["clientSecret"] == MASK
    assert len(master_api("get", BASE, realmOnly="true").json()) == 4
    assert master_api("get", BASE, briefRepresentation="maybe").status_code == 400


@pytest.mark.parametrize(("body", "status", "answer"), [
    (oidc(providerId="no-such-type"), 400, {"errorMessage": "Invalid identity provider id [no-such-type]"}),
    (oidc("with space"), 400, {"error": "Empty Space not allowed."}),
    (oidc("a/b"), 400, {"error": "Character '/' not allowed."}),
    (oidc("a?b"), 400, {"error": "Character '?' not allowed."}),
    (oidc(firstBrokerLoginFlowAlias="no such flow"), 400,
     {"errorMessage": "No available authentication flow with alias: no such flow"}),
    (oidc(postBrokerLoginFlowAlias="nope"), 400, {"errorMessage": "No available authentication flow with alias: nope"}),
    (oidc(secret="${vault.corp_secret}"), 400, None),
    (oidc(authenticateByDefault=True), 400, None),
    ({**oidc(), "config": {**oidc()["config"], "syncMode": "SOMETIMES"}}, 400, None),
    ([], 400, None),
])
def test_refusals_change_nothing(master_api, acme, body, status, answer):
    resp = master_api("post", BASE, body)
    assert resp.status_code == status, resp.content
    if answer is not None:
        assert resp.json() == answer
    else:
        assert resp.json()["errorMessage"]
    assert not IdentityProvider.objects.filter(realm=acme).exists()
    assert not events(acme, "IDENTITY_PROVIDER")


def test_duplicate_alias_and_alias_change(master_api, acme):
    created_id(master_api("post", BASE, oidc()))
    resp = master_api("post", BASE, oidc())
    assert resp.status_code == 409 and resp.json() == {"errorMessage": "Identity Provider corp already exists"}
    resp = master_api("put", f"{BASE}/corp", oidc("renamed"))
    assert resp.json() == {"errorMessage": "Identity Provider alias cannot be changed"}
    assert list(IdentityProvider.objects.filter(realm=acme).values_list("alias", flat=True)) == ["corp"]
    # A flow of the realm is accepted and answered.
    rep = oidc(firstBrokerLoginFlowAlias="first broker login", postBrokerLoginFlowAlias="browser")
    assert master_api("put", f"{BASE}/corp", rep).status_code == 204
    got = master_api("get", f"{BASE}/corp").json()
    assert (got["firstBrokerLoginFlowAlias"], got["postBrokerLoginFlowAlias"]) == ("first broker login", "browser")


def test_mappers_and_mapper_types(master_api, acme):
    created_id(master_api("post", BASE, oidc()))
    types = master_api("get", f"{BASE}/corp/mapper-types").json()
    assert set(types) == {t.id for t in mapper_types() if t.applies_to("oidc")}
    role = types["oidc-hardcoded-role-idp-mapper"]
    assert role["id"] == "oidc-hardcoded-role-idp-mapper" and role["name"] and role["category"]
    assert {p["name"] for p in role["properties"]} >= {"role", "syncMode"}

    body = {"name": "staff", "identityProviderAlias": "corp", "identityProviderMapper": "oidc-hardcoded-role-idp-mapper",
            "config": {"role": "offline_access", "syncMode": "INHERIT"}}
    resp = master_api("post", f"{BASE}/corp/mappers", body)
    mapper_id = created_id(resp)
    assert resp["Location"].endswith(f"/identity-provider/instances/corp/mappers/{mapper_id}")
    assert master_api("get", f"{BASE}/corp/mappers").json() == [{"id": mapper_id, **body}]
    assert master_api("get", f"{BASE}/corp/mappers/{mapper_id}").json() == {"id": mapper_id, **body}

    body["config"]["syncMode"] = "FORCE"
    assert master_api("put", f"{BASE}/corp/mappers/{mapper_id}", {"id": mapper_id, **body}).status_code == 204
    assert IdentityProviderMapper.objects.get(pk=mapper_id).config["syncMode"] == "FORCE"

    unknown = {**body, "name": "x", "identityProviderMapper": "no-such-mapper"}
    assert master_api("post", f"{BASE}/corp/mappers", unknown).json() == {
        "errorMessage": "Invalid identity provider mapper type [no-such-mapper]"}
    assert master_api("post", f"{BASE}/corp/mappers", body).json() == {
        "errorMessage": "Failed to add mapper 'staff' to identity provider [oidc]."}
    bad_mode = {**body, "name": "y", "config": {"syncMode": "NEVER"}}
    assert master_api("post", f"{BASE}/corp/mappers", bad_mode).status_code == 400
    assert master_api("get", f"{BASE}/corp/mappers/nope").json() == {"error": "Model not found"}
    assert master_api("get", f"{BASE}/none/mappers").status_code == 404

    assert master_api("delete", f"{BASE}/corp/mappers/{mapper_id}").status_code == 204
    assert master_api("delete", f"{BASE}/corp/mappers/{mapper_id}").status_code == 404
    assert [(e.type, e.resource_path) for e in events(acme, "IDENTITY_PROVIDER_MAPPER")] == [
        (op, f"identity-provider/instances/corp/mappers/{mapper_id}") for op in ("CREATE", "UPDATE", "DELETE")]
    # Deleting the provider deletes its mappers.
    created_id(master_api("post", f"{BASE}/corp/mappers", body))
    assert master_api("delete", f"{BASE}/corp").status_code == 204
    assert not IdentityProviderMapper.objects.filter(realm=acme).exists()


def test_roles_decide(acme):
    user = create_user(acme, "linked")
    IdentityProvider.objects.create(realm=acme, alias="corp", provider_id="oidc")
    viewer = realm_admin(acme, "viewer", "view-identity-providers")
    assert viewer("get", BASE).status_code == 200
    assert viewer("get", f"{BASE}/corp").status_code == 200
    assert viewer("get", f"{BASE}/corp/mapper-types").status_code == 200
    assert viewer("post", BASE, oidc("other")).json() == {"error": "HTTP 403 Forbidden"}
    assert viewer("put", f"{BASE}/corp", oidc()).status_code == 403
    assert viewer("delete", f"{BASE}/corp").status_code == 403
    assert viewer("post", "acme/identity-provider/import-config", {"providerId": "oidc", "fromUrl": "x"}
                  ).status_code == 403
    nobody = realm_admin(acme, "nobody", "view-users")
    assert nobody("get", BASE).status_code == 403
    assert nobody("get", "acme/identity-provider/providers/oidc").status_code == 403
    assert nobody("post", f"acme/users/{user.pk}/federated-identity/corp", {"userId": "1"}).status_code == 403
    manager = realm_admin(acme, "manager", "manage-identity-providers")
    assert manager("get", BASE).status_code == 200  # manage includes view
    created_id(manager("post", BASE, oidc("other")))
    assert manager("delete", f"{BASE}/other").status_code == 204


def test_federated_identity_links(master_api, acme):
    user = create_user(acme, "ann")
    other = create_user(acme, "bob")
    created_id(master_api("post", BASE, oidc()))
    path = f"acme/users/{user.pk}/federated-identity"
    assert master_api("get", path).json() == []
    resp = master_api("post", f"{path}/corp", {"identityProvider": "corp", "userId": "u-17", "userName": "ann@corp"})
    assert resp.status_code == 204
    assert master_api("get", path).json() == [{"identityProvider": "corp", "userId": "u-17", "userName": "ann@corp"}]
    assert master_api("post", f"{path}/corp", {"userId": "u-18"}).json() == {
        "errorMessage": "User is already linked with provider"}
    taken = master_api("post", f"acme/users/{other.pk}/federated-identity/corp", {"userId": "u-17"})
    assert taken.status_code == 409
    assert master_api("post", f"{path}/nope", {"userId": "1"}).json() == {"error": "Identity Provider not found"}
    assert master_api("get", "acme/users/no-such-user/federated-identity").json() == {"error": "User not found"}
    assert [(e.type, e.resource_path) for e in events(acme, "USER")] == [
        ("CREATE", f"users/{user.pk}/federated-identity/corp")]
    assert master_api("delete", f"{path}/corp").status_code == 204
    assert master_api("delete", f"{path}/corp").json() == {"error": "Link not found"}
    assert not FederatedIdentity.objects.filter(user=user).exists()
    assert events(acme, "USER")[-1].type == "DELETE"


def test_provider_types_and_server_info(master_api, acme):
    registered = {t.provider_id: t for t in provider_types()}
    assert master_api("get", "acme/identity-provider/providers/oidc").json() == {
        "id": "oidc", "name": registered["oidc"].name}
    assert master_api("get", "acme/identity-provider/providers/no-such-type").status_code == 400
    info = master_api("get", "/admin/serverinfo").json()
    assert {p["id"] for p in info["identityProviders"]} == {i for i, t in registered.items() if not t.social}
    assert {p["id"] for p in info["socialProviders"]} == {i for i, t in registered.items() if t.social}
    assert "oidc" in {p["id"] for p in info["identityProviders"]}
    assert set(info["providers"]["identity_provider_mapper"]["providers"]) == {m.id for m in mapper_types()}


class _Discovery(BaseHTTPRequestHandler):
    """An OpenID provider's discovery document on a loopback port."""

    def do_GET(self):  # noqa: N802 (http.server's name)
        base = f"http://127.0.0.1:{self.server.server_port}"
        body = json.dumps({"issuer": base, "authorization_endpoint": f"{base}/authorize",
                           "token_endpoint": f"{base}/token", "userinfo_endpoint": f"{base}/userinfo",
                           "jwks_uri": f"{base}/jwks", "end_session_endpoint": f"{base}/logout"}).encode()
        self.send_response(200 if self.path == "/.well-known/openid-configuration" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="session")
def discovery_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Discovery)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


def test_import_config_from_a_url_and_a_file(master_api, acme, discovery_server, outbound_loopback):
    url = f"{discovery_server}/.well-known/openid-configuration"
    resp = master_api("post", "acme/identity-provider/import-config", {"providerId": "oidc", "fromUrl": url})
    assert resp.status_code == 200, resp.content
    config = resp.json()
    assert config["authorizationUrl"] == f"{discovery_server}/authorize"
    assert config["tokenUrl"] == f"{discovery_server}/token"
    assert config["metadataDescriptorUrl"] == url

    missing = master_api("post", "acme/identity-provider/import-config", {"providerId": "oidc",
                                                                        "fromUrl": f"{discovery_server}/nothing"})
    assert missing.status_code == 400 and "HTTP 404" in missing.json()["errorMessage"]
    assert master_api("post", "acme/identity-provider/import-config", {"providerId": "oidc"}).json() == {
        "error": "HTTP 400 Bad Request"}
    assert master_api("post", "acme/identity-provider/import-config", {"providerId": "nope", "fromUrl": url}
                      ).json() == {"errorMessage": "Invalid identity provider id [nope]"}

    document = (DATA / "keycloak-testsuite-oidc-idp-discovery.json").read_bytes()  # Keycloak's own test's file
    upload = master_api.client.post("/admin/realms/acme/identity-provider/import-config", {
        "providerId": "oidc", "file": SimpleUploadedFile("oidc-idp.json", document)})
    assert upload.status_code == 200, upload.content
    assert upload.json()["authorizationUrl"] == "https://aai.egi.eu/oidc/authorize"
    assert upload.json()["tokenUrl"] == "https://aai.egi.eu/oidc/token"
    assert upload.json()["syncMode"] == "LEGACY"


def test_import_config_refuses_a_url_outbound_refuses(master_api, acme, settings):
    settings.IDP_OUTBOUND_ALLOW_HTTP = False
    resp = master_api("post", "acme/identity-provider/import-config",
                      {"providerId": "oidc", "fromUrl": "http://127.0.0.1:9/.well-known/openid-configuration"})
    assert resp.status_code == 400 and "Could not fetch the metadata" in resp.json()["errorMessage"]


def test_organization_fields_go_to_the_link_not_the_config(master_api, acme):
    acme.organizations_enabled = True
    acme.save()
    org = organizations.apply(acme, {"name": "Acme Corp", "domains": [{"name": "acme.example"}]})
    body = oidc(organizationId=org.pk)
    body["config"].update({"kc.org.domain": "acme.example", "kc.org.broker.redirect.mode.email-matches": "true"})
    created_id(master_api("post", BASE, body))
    idp = IdentityProvider.objects.get(realm=acme, alias="corp")
    assert "kc.org.domain" not in idp.config  # kept on the organization's link
    link = OrganizationIdentityProvider.objects.get(identity_provider=idp)
    assert (link.organization_id, link.domain, link.redirect_when_email_matches) == (org.pk, "acme.example", True)
    rep = master_api("get", f"{BASE}/corp").json()
    assert rep["organizationId"] == org.pk and rep["config"]["kc.org.domain"] == "acme.example"
    assert master_api("get", BASE, realmOnly="true").json() == []
    rep["config"]["kc.org.domain"] = "elsewhere.example"
    assert master_api("put", f"{BASE}/corp", rep).json() == {
        "errorMessage": "Domain elsewhere.example is not one of the organization's domains"}
    assert OrganizationIdentityProvider.objects.get(identity_provider=idp).domain == "acme.example"


def test_keycloak_testsuite_saml_provider_as_kcadm_sends_it(master_api, acme):
    rep = json.loads((DATA / "keycloak-testsuite-cli-saml-idp.json").read_text())
    assert created_id(master_api("post", BASE, rep)) == "idpAlias"
    got = master_api("get", f"{BASE}/idpAlias").json()
    assert (got["providerId"], got["displayName"], got["firstBrokerLoginFlowAlias"]) == (
        "saml", "SAML_UPDATED", "first broker login")
    assert {k: got["config"][k] for k in rep["config"]} == rep["config"]


def test_a_mapper_type_of_another_provider_type_is_refused(master_api, acme):
    created_id(master_api("post", BASE, oidc()))
    assert "saml-role-idp-mapper" not in master_api("get", f"{BASE}/corp/mapper-types").json()
    body = {"name": "from-saml", "identityProviderMapper": "saml-role-idp-mapper",
            "config": {"attribute.name": "role", "attribute.value": "admin", "role": "offline_access"}}
    assert master_api("post", f"{BASE}/corp/mappers", body).json() == {
        "errorMessage": "Mapper type saml-role-idp-mapper is not available for identity providers of type oidc"}
    assert not IdentityProviderMapper.objects.filter(realm=acme).exists()


def test_import_config_of_a_type_without_metadata(master_api, acme, discovery_server, outbound_loopback):
    url = f"{discovery_server}/.well-known/openid-configuration"
    resp = master_api("post", "acme/identity-provider/import-config", {"providerId": "oauth2", "fromUrl": url})
    assert resp.status_code == 400
    assert "no metadata to import" in resp.json()["errorMessage"]
