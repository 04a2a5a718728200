"""Server features as Keycloak's --features / --features-disabled: supported ones on unless
disabled, preview and experimental ones off unless enabled; an unknown name stops production
start-up with one line; the Admin API's server info says what is off and what is preview."""
import pytest

from idp.config import _setting_problems
from realms import features
from tests.realms.test_admin_rest_api import master_api  # noqa: F401 (fixture)


def test_supported_features_are_on_and_preview_ones_off_by_default(settings):
    settings.IDP_FEATURES = settings.IDP_FEATURES_DISABLED = ""
    assert features.enabled("device-flow") and features.enabled("token-exchange-standard")
    assert not features.enabled("token-exchange") and not features.enabled("client-id-metadata-document")


def test_features_are_switched_by_the_settings_at_once(settings):
    settings.IDP_FEATURES = " token-exchange , token-exchange-delegation"
    settings.IDP_FEATURES_DISABLED = "device-flow"
    assert features.enabled("token-exchange") and features.enabled("token-exchange-delegation")
    assert not features.enabled("device-flow") and "device-flow" in features.disabled()
    settings.IDP_FEATURES_DISABLED = "token-exchange"  # disabling wins over enabling, as in Keycloak
    assert not features.enabled("token-exchange")


def test_an_unknown_feature_name_is_a_start_up_problem(monkeypatch):
    monkeypatch.setenv("IDP_FEATURES", "token-exchange,tokenexchange")
    problems = [p for p in _setting_problems() if p.startswith("IDP_FEATURES")]
    assert len(problems) == 1 and "unknown feature tokenexchange" in problems[0]


@pytest.mark.django_db
def test_server_info_lists_disabled_and_preview_features_by_keycloaks_names(settings, master_api):  # noqa: F811
    settings.IDP_FEATURES, settings.IDP_FEATURES_DISABLED = "token-exchange", "ciba"
    info = master_api("get", "/admin/serverinfo").json()
    profile = info["profileInfo"]
    assert "CIBA" in profile["disabledFeatures"] and "TOKEN_EXCHANGE" not in profile["disabledFeatures"]
    assert "TOKEN_EXCHANGE_DELEGATION" in profile["disabledFeatures"]
    assert {"TOKEN_EXCHANGE", "TOKEN_EXCHANGE_DELEGATION"} <= set(profile["previewFeatures"])
    by_name = {f["name"]: f for f in info["features"]}
    assert by_name["TOKEN_EXCHANGE"]["enabled"] is True and by_name["CIBA"]["enabled"] is False
    assert by_name["DEVICE_FLOW"]["type"] == "SUPPORTED"


@pytest.mark.django_db
def test_discovery_lists_only_what_the_features_switched_on(settings):
    from oidc.services import discovery_document
    from realms.representation.services import create_realm

    realm = create_realm("features")
    issuer = "https://id.example/realms/features"
    settings.IDP_FEATURES = ""
    settings.IDP_FEATURES_DISABLED = "device-flow,ciba,client-registration,token-exchange-standard"
    off = discovery_document(realm, issuer)
    for key in ("device_authorization_endpoint", "backchannel_authentication_endpoint", "registration_endpoint"):
        assert key not in off
    assert {"urn:ietf:params:oauth:grant-type:device_code", "urn:openid:params:grant-type:ciba",
            "urn:ietf:params:oauth:grant-type:token-exchange"}.isdisjoint(off["grant_types_supported"])
    settings.IDP_FEATURES_DISABLED = ""
    on = discovery_document(realm, issuer)
    assert on["device_authorization_endpoint"] == issuer + "/protocol/openid-connect/auth/device"
    assert on["backchannel_authentication_endpoint"] == issuer + "/protocol/openid-connect/ext/ciba/auth"
    assert on["registration_endpoint"] == issuer + "/clients-registrations/openid-connect"
    assert {"authorization_code", "refresh_token", "client_credentials", "password",
            "urn:ietf:params:oauth:grant-type:device_code", "urn:openid:params:grant-type:ciba",
            "urn:ietf:params:oauth:grant-type:token-exchange",
            "urn:ietf:params:oauth:grant-type:jwt-bearer"} <= set(on["grant_types_supported"])
