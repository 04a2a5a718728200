"""The ``ciba`` server feature: off, its endpoints answer as if they did not exist and its grant
is unsupported; discovery lists the endpoint only while it is on."""
from tests.oidc.ciba.conftest import answer, poll, start


def test_feature_off(http, realm, channel, settings):
    auth_req_id = start(http, realm).json()["auth_req_id"]
    bearer = channel.bearer()
    settings.IDP_FEATURES_DISABLED = "ciba"
    assert start(http, realm).status_code == 404
    assert answer(http, realm, bearer).status_code == 404
    response = poll(http, realm, auth_req_id)
    assert response.status_code == 400 and response.json()["error"] == "unsupported_grant_type"
    discovery = http.get(f"/realms/{realm.name}/.well-known/openid-configuration").json()
    assert "backchannel_authentication_endpoint" not in discovery
    assert "urn:openid:params:grant-type:ciba" not in discovery["grant_types_supported"]

    settings.IDP_FEATURES_DISABLED = ""
    discovery = http.get(f"/realms/{realm.name}/.well-known/openid-configuration").json()
    assert discovery["backchannel_authentication_endpoint"].endswith("/protocol/openid-connect/ext/ciba/auth")
    assert "urn:openid:params:grant-type:ciba" in discovery["grant_types_supported"]
    assert answer(http, realm, bearer).status_code == 200
    assert poll(http, realm, auth_req_id).status_code == 200
