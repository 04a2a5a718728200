"""A mapper type this server does not implement is refused wherever mappers are written (realm
import, partial import, the Admin API's protocol-mapper, client and client-scope endpoints),
never stored to do nothing; a pairwise mapper whose sector does not fit is refused the same way."""
import pytest

from realms.models import Client, ClientScope, ProtocolMapper
from realms.representation import RepresentationError, import_realm
from tests.realms.test_admin_rest_api import acme, created_id, master_api  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db

UNKNOWN = {"name": "scripted", "protocol": "openid-connect", "protocolMapper": "oidc-script-based-protocol-mapper",
           "config": {"script": "exports = 1"}}
SAML = {"name": "roles", "protocol": "saml", "protocolMapper": "saml-role-list-mapper",
        "config": {"single": "false", "attribute.name": "Role"}}


def test_import_refuses_an_unknown_type_naming_mapper_and_type():
    with pytest.raises(RepresentationError) as exc:
        import_realm({"realm": "unk1", "clients": [{"clientId": "rp", "protocolMappers": [UNKNOWN]}]})
    assert "clients[0].protocolMappers[0]" in str(exc.value)
    assert "'scripted'" in str(exc.value) and "oidc-script-based-protocol-mapper" in str(exc.value)


def test_import_refuses_an_unknown_type_in_a_client_scope():
    with pytest.raises(RepresentationError, match="clientScopes.*oidc-script-based-protocol-mapper"):
        import_realm({"realm": "unk2", "clientScopes": [{"name": "s", "protocol": "openid-connect",
                                                          "protocolMappers": [UNKNOWN]}]})


def test_saml_mappers_are_the_saml_apps():
    realm = import_realm({"realm": "unk3", "clients": [{"clientId": "sp", "protocol": "saml",
                                                         "protocolMappers": [SAML]}]}).realm
    assert ProtocolMapper.objects.filter(client__realm=realm, name="roles").exists()


def test_partial_import_refuses_an_unknown_type(master_api, acme):
    resp = master_api("post", "acme/partialImport", {"ifResourceExists": "FAIL",
                                                     "clients": [{"clientId": "rp", "protocolMappers": [UNKNOWN]}]})
    assert resp.status_code == 400 and "oidc-script-based-protocol-mapper" in resp.json()["errorMessage"]
    assert not Client.objects.filter(realm=acme, client_id="rp").exists()


def test_admin_api_refuses_an_unknown_type(master_api, acme):
    client_id = created_id(master_api("post", "acme/clients", {"clientId": "rp", "redirectUris": ["https://rp.example/cb"]}))
    base = f"acme/clients/{client_id}/protocol-mappers"
    resp = master_api("post", f"{base}/models", UNKNOWN)
    assert resp.status_code == 400
    assert resp.json() == {"errorMessage": "protocol mapper 'scripted': Unsupported protocol mapper type "
                                           "'oidc-script-based-protocol-mapper'"}
    assert master_api("post", f"{base}/add-models", [UNKNOWN]).status_code == 400
    known = {"name": "tenant", "protocol": "openid-connect", "protocolMapper": "oidc-hardcoded-claim-mapper",
             "config": {"claim.name": "tenant", "claim.value": "acme"}}
    mapper_id = created_id(master_api("post", f"{base}/models", known))
    resp = master_api("put", f"{base}/models/{mapper_id}", {**known, "id": mapper_id,
                                                             "protocolMapper": "oidc-nope-mapper"})
    assert resp.status_code == 400
    assert ProtocolMapper.objects.get(pk=mapper_id).protocol_mapper == "oidc-hardcoded-claim-mapper"
    resp = master_api("post", "acme/clients", {"clientId": "rp2", "protocolMappers": [UNKNOWN]})
    assert resp.status_code == 400 and not Client.objects.filter(realm=acme, client_id="rp2").exists()


def test_admin_api_client_scope_refuses_an_unknown_type(master_api, acme):
    resp = master_api("post", "acme/client-scopes", {"name": "s", "protocol": "openid-connect",
                                                      "protocolMappers": [UNKNOWN]})
    assert resp.status_code == 400 and not ClientScope.objects.filter(realm=acme, name="s").exists()
    scope_id = created_id(master_api("post", "acme/client-scopes", {"name": "s", "protocol": "openid-connect"}))
    resp = master_api("post", f"acme/client-scopes/{scope_id}/protocol-mappers/models", UNKNOWN)
    assert resp.status_code == 400


def test_admin_api_pairwise_mapper_is_checked_and_salted(master_api, acme):
    client_id = created_id(master_api("post", "acme/clients", {
        "clientId": "rp", "redirectUris": ["https://a.example/cb", "https://b.example/cb"]}))
    base = f"acme/clients/{client_id}/protocol-mappers/models"
    pairwise = {"name": "pairwise", "protocol": "openid-connect", "protocolMapper": "oidc-sha256-pairwise-sub-mapper",
                "config": {}}
    resp = master_api("post", base, pairwise)
    assert resp.status_code == 400 and "multiple host" in resp.json()["errorMessage"]
    client = Client.objects.get(pk=client_id)
    client.redirect_uris = ["https://a.example/cb"]
    client.save()
    mapper_id = created_id(master_api("post", base, pairwise))
    assert master_api("get", f"{base}/{mapper_id}").json()["config"]["pairwiseSubAlgorithmSalt"]
    resp = master_api("put", f"acme/clients/{client_id}", {"clientId": "rp", "redirectUris": ["https://a.example/cb",
                                                                                           "https://c.example/cb"]})
    assert resp.status_code == 400 and "multiple host" in resp.json()["errorMessage"]
    assert Client.objects.get(pk=client_id).redirect_uris == ["https://a.example/cb"]
