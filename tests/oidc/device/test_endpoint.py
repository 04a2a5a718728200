"""The device authorization endpoint (RFC 8628 §3.1-§3.2) as Keycloak answers it: client
authentication, the client switch, Keycloak's user code, the verification URIs, the lifespan and
interval of the realm or the client, scope validation, events, and the feature switch."""
import re

from oidc.models import DeviceAuthorization
from realms.models import Event
from tests.oidc.device.conftest import SECRET, authorize, device_url, error, set_client_attributes, set_realm


def test_answer_has_keycloaks_shape_and_stores_only_digests(http, realm):
    response = authorize(http, realm)
    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == {"device_code", "user_code", "verification_uri", "verification_uri_complete",
                         "expires_in", "interval"}
    # Keycloak's DefaultOAuth2DeviceUserCodeProvider: eight letters A-Z, shown XXXX-XXXX.
    assert re.fullmatch(r"[A-Z]{4}-[A-Z]{4}", body["user_code"])
    issuer = f"http://testserver/realms/{realm.name}"
    assert body["verification_uri"] == issuer + "/device"
    assert body["verification_uri_complete"] == issuer + "/device?user_code=" + body["user_code"]
    assert body["expires_in"] == 600 and body["interval"] == 0
    assert response["Cache-Control"] == "no-store, must-revalidate, max-age=0"
    row = DeviceAuthorization.objects.get()
    assert row.state == "pending" and row.scope == "openid" and row.client.client_id == "tv"
    assert body["device_code"] not in row.digest and body["user_code"].replace("-", "") not in row.user_code_digest
    assert len(row.digest) == len(row.user_code_digest) == 64
    event = Event.objects.get(type="OAUTH2_DEVICE_AUTH")
    assert event.client_id == "tv" and event.details["client_auth_method"] == "none"


def test_each_request_gets_its_own_codes(http, realm):
    first, second = authorize(http, realm).json(), authorize(http, realm).json()
    assert first["device_code"] != second["device_code"] and first["user_code"] != second["user_code"]


def test_confidential_client_authenticates(http, realm):
    assert authorize(http, realm, "box", SECRET).status_code == 200
    refused = authorize(http, realm, "box", "wrong-secret")
    assert refused.status_code == 401 and refused.json()["error"] == "invalid_client"
    assert Event.objects.get(type="OAUTH2_DEVICE_AUTH_ERROR").error == "invalid_client"
    unauthenticated = http.post(device_url(realm), {"client_id": "box"})
    assert unauthenticated.status_code == 401
    assert http.post(device_url(realm), {"client_id": "nobody"}).status_code == 401


def test_client_switch_off_is_unauthorized_client(http, realm):
    assert error(authorize(http, realm, "no-device")) == (
        400, "unauthorized_client",
        "Client is not allowed to initiate OAuth 2.0 Device Authorization Grant. The flow is disabled for the client.")
    assert Event.objects.get(type="OAUTH2_DEVICE_AUTH_ERROR").error == "not_allowed"
    set_client_attributes(realm, "tv", **{"oauth2.device.authorization.grant.enabled": "false"})
    assert error(authorize(http, realm))[1] == "unauthorized_client"
    assert not DeviceAuthorization.objects.exists()


def test_scope_is_validated_as_at_the_token_endpoint(http, realm):
    assert error(authorize(http, realm, scope="openid no-such-scope"))[1] == "invalid_scope"
    assert Event.objects.get(type="OAUTH2_DEVICE_AUTH_ERROR").error == "invalid_scope"
    assert authorize(http, realm, scope="openid offline_access").status_code == 200


def test_duplicated_parameter(http, realm):
    response = http.post(device_url(realm), "client_id=tv&scope=openid&scope=email",
                         content_type="application/x-www-form-urlencoded")
    assert error(response) == (400, "invalid_grant", "duplicated parameter")


def test_realm_lifespan_and_interval_take_effect(http, realm):
    set_realm(realm, oauth2_device_code_lifespan=120, oauth2_device_polling_interval=7)
    body = authorize(http, realm).json()
    assert (body["expires_in"], body["interval"]) == (120, 7)
    row = DeviceAuthorization.objects.get()
    assert row.interval == 7 and 118 <= (row.expires_at - row.created).total_seconds() <= 120


def test_client_lifespan_and_interval_override_the_realms(http, realm):
    set_realm(realm, oauth2_device_code_lifespan=120, oauth2_device_polling_interval=7)
    set_client_attributes(realm, "tv", **{"oauth2.device.code.lifespan": "30", "oauth2.device.polling.interval": "2"})
    body = authorize(http, realm).json()
    assert (body["expires_in"], body["interval"]) == (30, 2)
    other = authorize(http, realm, "radio").json()
    assert (other["expires_in"], other["interval"]) == (120, 7)
    # An empty attribute is unset (the console leaves them so).
    set_client_attributes(realm, "tv", **{"oauth2.device.code.lifespan": "", "oauth2.device.polling.interval": ""})
    assert authorize(http, realm).json()["expires_in"] == 120


def test_short_verification_uri_realm_attribute(http, realm):
    set_realm(realm, attributes={"shortVerificationUri": "https://go.example/d"})
    body = authorize(http, realm).json()
    assert body["verification_uri"] == "https://go.example/d"
    assert body["verification_uri_complete"] == "https://go.example/d?user_code=" + body["user_code"]


def test_expired_rows_are_left_to_the_periodic_purge(http, realm):
    from datetime import timedelta

    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from realms import purges

    authorize(http, realm)
    DeviceAuthorization.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    with CaptureQueriesContext(connection) as queries:
        authorize(http, realm)
    assert not [q for q in queries if q["sql"].startswith("DELETE")]  # no sweep per request
    assert DeviceAuthorization.objects.count() == 2
    assert purges.run()["oidc.device_requests"] == 1
    assert DeviceAuthorization.objects.count() == 1


def test_cors_preflight_and_get_refused(http, realm):
    assert http.options(device_url(realm), HTTP_ORIGIN="https://tv.example",
                        HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST").status_code == 200
    assert http.get(device_url(realm)).status_code == 405


def test_feature_off_endpoint_and_pages_are_404_and_absent_from_discovery(http, realm, settings):
    discovery = f"/realms/{realm.name}/.well-known/openid-configuration"
    meta = http.get(discovery).json()
    assert meta["device_authorization_endpoint"].endswith("/protocol/openid-connect/auth/device")
    assert "urn:ietf:params:oauth:grant-type:device_code" in meta["grant_types_supported"]
    settings.IDP_FEATURES_DISABLED = "device-flow"
    assert authorize(http, realm).status_code == 404
    assert http.get(f"/realms/{realm.name}/device").status_code == 404
    assert http.get(f"/realms/{realm.name}/device/status").status_code == 404
    meta = http.get(discovery).json()
    assert "device_authorization_endpoint" not in meta
    assert "urn:ietf:params:oauth:grant-type:device_code" not in meta["grant_types_supported"]
