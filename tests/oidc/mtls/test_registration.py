"""Dynamic client registration (RFC 7591 with RFC 8705 §2.1.2, §2.2.2): ``tls_client_auth`` is
Keycloak's ``client-x509`` with ``x509.subjectdn`` compared exactly, ``self_signed_tls_client_auth``
a client whose registered JWKS holds the certificate's key; each then authenticates by certificate."""
import json

import pytest

from realms.models import Client
from tests.oidc.registration.conftest import OIDC, call, initial_token
from tests.realms.test_admin_rest_api import acme, master_api, realm_admin, token  # noqa: F401 (fixtures)

from .conftest import REDIRECT, TLS_DN, client_credentials

pytestmark = pytest.mark.django_db


def register(master_api, realm, body):  # noqa: F811 (the fixture's value)
    response = call("post", realm, OIDC, body, bearer=initial_token(master_api, realm))
    assert response.status_code == 201, response.content
    return response.json()


def test_tls_client_auth_registration(master_api, acme, proxied, tls_cert, http):  # noqa: F811
    out = register(master_api, acme, {"redirect_uris": [REDIRECT], "grant_types": ["client_credentials"],
                                      "token_endpoint_auth_method": "tls_client_auth",
                                      "tls_client_auth_subject_dn": TLS_DN,
                                      "tls_client_certificate_bound_access_tokens": True})
    assert out["token_endpoint_auth_method"] == "tls_client_auth" and "client_secret" not in out
    assert out["tls_client_auth_subject_dn"] == TLS_DN and out["tls_client_certificate_bound_access_tokens"] is True
    client = Client.objects.get(realm=acme, client_id=out["client_id"])
    assert client.client_authenticator_type == "client-x509"
    assert client.attributes["x509.subjectdn"] == TLS_DN
    assert client.attributes["x509.allow.regex.pattern.comparison"] == "false"
    response = client_credentials(http, acme, out["client_id"], tls_cert)
    assert response.status_code == 200, response.content


def test_self_signed_tls_client_auth_registration(master_api, acme, proxied, self_cert, http):  # noqa: F811
    out = register(master_api, acme, {"redirect_uris": [REDIRECT], "grant_types": ["client_credentials"],
                                      "token_endpoint_auth_method": "self_signed_tls_client_auth",
                                      "jwks": {"keys": [self_cert.jwk]}})
    assert out["token_endpoint_auth_method"] == "self_signed_tls_client_auth"
    client = Client.objects.get(realm=acme, client_id=out["client_id"])
    assert client.client_authenticator_type == "client-x509-self-signed"
    assert json.loads(client.attributes["jwks.string"]) == {"keys": [self_cert.jwk]}
    assert client_credentials(http, acme, out["client_id"], self_cert).status_code == 200
