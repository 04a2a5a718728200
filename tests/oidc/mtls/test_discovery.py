"""Discovery (RFC 8705 §3.3, §5): mutual TLS listed once a proxy passes client certificates
(``IDP_CLIENT_CERT_HEADER``), with the aliases of Keycloak's endpoints at the same URLs."""
import pytest

from realms import features

pytestmark = pytest.mark.django_db
METHODS = ("token_endpoint_auth_methods_supported", "introspection_endpoint_auth_methods_supported",
           "revocation_endpoint_auth_methods_supported")


def document(http, realm):
    return http.get(f"/realms/{realm.name}/.well-known/openid-configuration").json()


def test_mutual_tls_is_listed_with_its_aliases(http, realm, proxied):
    doc = document(http, realm)
    assert doc["tls_client_certificate_bound_access_tokens"] is True
    for name in METHODS:
        assert {"tls_client_auth", "self_signed_tls_client_auth", "private_key_jwt"} <= set(doc[name])
    aliases = doc["mtls_endpoint_aliases"]
    expected = {"token_endpoint", "revocation_endpoint", "introspection_endpoint", "userinfo_endpoint",
                "pushed_authorization_request_endpoint"}
    expected |= {name for name, feature in (("device_authorization_endpoint", "device-flow"),
                                            ("backchannel_authentication_endpoint", "ciba"),
                                            ("registration_endpoint", "client-registration"))
                 if features.enabled(feature)}
    assert set(aliases) == expected
    assert all(aliases[name] == doc[name] for name in aliases)


def test_without_client_certificates_nothing_is_promised(http, realm, settings):
    settings.IDP_CLIENT_CERT_HEADER = ""
    doc = document(http, realm)
    assert doc["tls_client_certificate_bound_access_tokens"] is False
    assert "mtls_endpoint_aliases" not in doc
    for name in METHODS:
        assert not {"tls_client_auth", "self_signed_tls_client_auth"} & set(doc[name])
