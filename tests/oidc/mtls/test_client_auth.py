"""Client authentication by certificate (RFC 8705 §2): ``tls_client_auth`` as Keycloak's
``client-x509`` (its subject DN exactly, or as a pattern), ``self_signed_tls_client_auth`` (the
registered key), the certificate believed only from a trusted proxy, in each proxy's format."""
import base64
import json
from urllib.parse import quote

import pytest

from realms.data import realm_cache
from realms.models import Client

from .conftest import META, SECRET, TLS_DN, Pki, client_credentials, url, with_cert

pytestmark = pytest.mark.django_db
OUTSIDE = "203.0.113.5"


def refused(response, description=None):
    assert response.status_code == 401, response.content
    assert response.json()["error"] == "invalid_client"
    if description:
        assert response.json()["error_description"] == description


def test_tls_client_auth_with_the_registered_subject(http, realm, proxied, tls_cert):
    response = client_credentials(http, realm, "tls-app", tls_cert)
    assert response.status_code == 200, response.content
    assert response.json()["token_type"] == "Bearer"


def test_tls_client_auth_refusals(http, realm, proxied, pki, tls_cert):
    refused(client_credentials(http, realm, "tls-app"), "Client certificate missing")
    refused(client_credentials(http, realm, "tls-app", pki.issue("CN=tls-app,O=Other Org,C=DE")),
            "Certificate subject DN does not match the client's")
    # Only the client's own certificate counts, never the CA of its chain.
    refused(client_credentials(http, realm, "tls-app", pki.ca))
    refused(client_credentials(http, realm, "tls-app", Pki.self_signed("CN=tls-app-2,O=Example Org,C=DE")))
    # A certificate client sending a secret, or the certificate of a secret client: nothing else counts.
    refused(http.post(url(realm, "token"), {"grant_type": "client_credentials", "client_id": "tls-app",
                                            "client_secret": SECRET}, **with_cert(tls_cert)))
    refused(client_credentials(http, realm, "secret-app", tls_cert))
    # A garbled header is no certificate.
    refused(http.post(url(realm, "token"), {"grant_type": "client_credentials", "client_id": "tls-app"},
                      **{META: "-----BEGIN CERTIFICATE-----garbage"}), "Client certificate missing")


def test_the_header_is_believed_from_trusted_proxies_only(http, realm, proxied, tls_cert, settings):
    refused(client_credentials(http, realm, "tls-app", tls_cert, REMOTE_ADDR=OUTSIDE, secure=True),
            "Client certificate missing")
    settings.IDP_TRUSTED_PROXIES = []
    refused(client_credentials(http, realm, "tls-app", tls_cert), "Client certificate missing")
    settings.IDP_TRUSTED_PROXIES = ["10.0.0.0/8"]
    assert client_credentials(http, realm, "tls-app", tls_cert, REMOTE_ADDR="10.9.8.7").status_code == 200
    settings.IDP_CLIENT_CERT_HEADER = ""  # no proxy passes certificates: none is read
    refused(client_credentials(http, realm, "tls-app", tls_cert, REMOTE_ADDR="10.9.8.7"))


@pytest.mark.parametrize("dn", [TLS_DN, "CN=tls-app, O=Example Org, C=DE", "CN=tls-app,O=Example Org,C=DE"])
def test_exact_comparison_is_of_the_distinguished_name(http, realm, proxied, tls_cert, dn):
    client = Client.objects.get(realm=realm, client_id="tls-app")
    client.attributes = {**client.attributes, "x509.subjectdn": dn}
    client.save()
    realm_cache.clear()
    assert client_credentials(http, realm, "tls-app", tls_cert).status_code == 200


def test_exact_comparison_is_no_pattern(http, realm, proxied, pki):
    client = Client.objects.get(realm=realm, client_id="tls-app")
    client.attributes = {**client.attributes, "x509.subjectdn": "CN=tls-app.*,O=Example Org,C=DE"}
    client.save()
    realm_cache.clear()
    refused(client_credentials(http, realm, "tls-app", pki.issue("CN=tls-app-x,O=Example Org,C=DE")))


@pytest.mark.parametrize("attributes", [{"x509.subjectdn": "CN=(unclosed"},
                                        {"x509.subjectdn": "not a dn", "x509.allow.regex.pattern.comparison": "false"}])
def test_a_subject_stored_unchecked_matches_nothing(http, realm, proxied, tls_cert, attributes):
    """A value written before writes were checked (straight to the database) is a refusal, never a 500."""
    Client.objects.filter(realm=realm, client_id="tls-app").update(attributes=attributes)
    realm_cache.clear()
    refused(client_credentials(http, realm, "tls-app", tls_cert), "Certificate subject DN does not match the client's")


@pytest.mark.parametrize("dn, ok", [
    ("CN=regex-app-7,O=Example Org", True),
    ("CN=regex-app-42,O=Example Org,C=DE", True),
    ("CN=regex-app-x,O=Example Org", False),
    ("CN=regex-app-7,O=Example Org,C=FR", False),  # the whole DN must match
    ("CN=evil,OU=CN=regex-app-7,O=Example Org", False),
])
def test_pattern_comparison_as_keycloak_by_default(http, realm, proxied, pki, dn, ok):
    response = client_credentials(http, realm, "regex-app", pki.issue(dn))
    if ok:
        assert response.status_code == 200, response.content
    else:
        refused(response)


def test_self_signed_tls_client_auth(http, realm, proxied, self_cert):
    response = client_credentials(http, realm, "self-app", self_cert)
    assert response.status_code == 200, response.content
    refused(client_credentials(http, realm, "self-app", Pki.self_signed("CN=self-app")),
            "Certificate public key is not one the client registered")
    refused(client_credentials(http, realm, "self-app"), "Client certificate missing")


def test_self_signed_by_the_keycloak_certificate_attribute(http, realm, proxied):
    """Keycloak keeps a client's key as ``jwt.credential.certificate`` (base64 DER) when it has no JWKS."""
    issued = Pki.self_signed("CN=other-name")
    client = Client.objects.get(realm=realm, client_id="self-app")
    client.attributes = {"jwt.credential.certificate": base64.b64encode(issued.der).decode()}
    client.save()
    realm_cache.clear()
    assert client_credentials(http, realm, "self-app", issued).status_code == 200


def _xfcc(issued):
    return (f'By=spiffe://proxy;Hash=abc;Cert="{quote(issued.pem, safe="")}";'
            f'Subject="{issued.cert.subject.rfc4514_string()}";URI=')


@pytest.mark.parametrize("style", ["nginx", "apache", "haproxy", "envoy"])
def test_header_formats_of_each_proxy(http, realm, proxied, tls_cert, style):
    values = {
        "nginx": tls_cert.nginx(),
        "apache": tls_cert.pem.replace("\n", " "),  # a PEM whose newlines a proxy turned into spaces
        "haproxy": base64.b64encode(tls_cert.der).decode(),
        # Envoy appends its client's element last; an earlier one came from further out.
        "envoy": f'{_xfcc(Pki.self_signed("CN=someone-else"))},{_xfcc(tls_cert)}',
    }
    header = "x-forwarded-client-cert" if style == "envoy" else "ssl-client-cert"
    proxied.IDP_CLIENT_CERT_HEADER = header
    meta = "HTTP_" + header.upper().replace("-", "_")
    response = http.post(url(realm, "token"), {"grant_type": "client_credentials", "client_id": "tls-app"},
                         **{meta: values[style]})
    assert response.status_code == 200, response.content


def test_introspection_and_revocation_authenticate_by_certificate(http, realm, proxied, tls_cert):
    token = client_credentials(http, realm, "tls-app", tls_cert).json()["access_token"]
    body = http.post(url(realm, "token/introspect"), {"token": token, "client_id": "tls-app"},
                     **with_cert(tls_cert)).json()
    assert body["active"] is True
    refused(http.post(url(realm, "token/introspect"), {"token": token, "client_id": "tls-app"}))
    assert http.post(url(realm, "revoke"), {"token": token, "client_id": "tls-app"},
                     **with_cert(tls_cert)).status_code == 200
    body = http.post(url(realm, "token/introspect"), {"token": token, "client_id": "tls-app"},
                     **with_cert(tls_cert)).json()
    assert body == {"active": False}


def test_authentication_events_name_the_method(http, realm, proxied, tls_cert, self_cert):
    realm.events_enabled = True
    realm.save()
    realm_cache.clear()
    client_credentials(http, realm, "tls-app", tls_cert)
    client_credentials(http, realm, "self-app", self_cert)
    from realms.models import Event
    methods = [e.details.get("client_auth_method") for e in Event.objects.filter(realm=realm, type="CLIENT_LOGIN")]
    assert sorted(methods) == ["self_signed_tls_client_auth", "tls_client_auth"], json.dumps(methods)


def test_self_signed_by_keys_at_the_jwks_url(http, realm, proxied, self_cert, outbound_loopback, monkeypatch):
    """A ``jwks.url`` is fetched and cached as for private_key_jwt; a key rotated in since is
    found by fetching it again once (here without private_key_jwt's minimum interval between fetches)."""
    from oidc import client_auth
    from tests.servers import Receiver

    rotated = Pki.self_signed("CN=self-app")
    jwks = Receiver()
    jwks.script = [(200, {"Content-Type": "application/json"}, json.dumps({"keys": [self_cert.jwk]}).encode()),
                   (200, {"Content-Type": "application/json"},
                    json.dumps({"keys": [self_cert.jwk, rotated.jwk]}).encode())]
    try:
        client = Client.objects.get(realm=realm, client_id="self-app")
        client.attributes = {"use.jwks.url": "true", "jwks.url": jwks.url("/jwks")}
        client.save()
        realm_cache.clear()
        client_auth._jwks_by_url.clear()
        monkeypatch.setattr(client_auth, "JWKS_REFETCH_MIN_INTERVAL", 0)
        assert client_credentials(http, realm, "self-app", self_cert).status_code == 200
        assert client_credentials(http, realm, "self-app", rotated).status_code == 200
        assert len(jwks.requests) == 2
        jwks.default = (200, {"Content-Type": "application/json"}, json.dumps({"keys": [rotated.jwk]}).encode())
        refused(client_credentials(http, realm, "self-app", Pki.self_signed("CN=stranger")))
    finally:
        jwks.close()
        client_auth._jwks_by_url.clear()
