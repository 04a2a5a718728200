"""Fixtures of the mutual TLS tests (RFC 8705): a throw-away CA and client certificates made with
``cryptography``, the header a TLS terminating proxy passes them in, and a realm whose clients
authenticate by certificate or ask for certificate-bound tokens. The expected thumbprints are
computed here from the DER, apart from the server's code."""
import base64
import datetime
import hashlib
import ipaddress
import json
import uuid
from urllib.parse import quote

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from django.test import Client as HttpClient
from jwcrypto import jwk

from realms.representation import import_realm

HEADER = "ssl-client-cert"
META = "HTTP_SSL_CLIENT_CERT"
PROXY = "127.0.0.1"  # the test client's address: the trusted proxy unless a test says otherwise
REDIRECT = "https://app.example/cb"
SECRET = "mtls-secret-" + "s" * 24
TLS_DN = "CN=tls-app,O=Example Org,C=DE"


def _name(dn):
    return x509.Name.from_rfc4514_string(dn)


class Issued:
    """A certificate and its private key."""

    def __init__(self, cert, key):
        self.cert, self.key = cert, key

    @property
    def der(self):
        return self.cert.public_bytes(serialization.Encoding.DER)

    @property
    def pem(self):
        return self.cert.public_bytes(serialization.Encoding.PEM).decode()

    @property
    def key_pem(self):
        return self.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()).decode()

    @property
    def x5t(self):
        return base64.urlsafe_b64encode(hashlib.sha256(self.der).digest()).rstrip(b"=").decode()

    @property
    def jwk(self):
        return json.loads(jwk.JWK.from_pyca(self.key.public_key()).export_public())

    def nginx(self):
        """nginx's ``$ssl_client_escaped_cert``: the PEM URL-encoded."""
        return quote(self.pem, safe="")


def _build(subject, issuer, public_key, signing_key, *, ca=False, server_ip=None):
    now = datetime.datetime.now(datetime.UTC)
    builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(public_key)
               .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if server_ip:
        builder = (builder.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
                   .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(server_ip))]),
                                  critical=False))
    elif not ca:
        builder = builder.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
    return builder.sign(signing_key, hashes.SHA256())


class Pki:
    """A CA issuing client certificates, and self-signed ones."""

    def __init__(self):
        key = ec.generate_private_key(ec.SECP256R1())
        name = _name("CN=mTLS test CA,O=Example Org")
        self.ca = Issued(_build(name, name, key.public_key(), key, ca=True), key)

    def issue(self, dn, *, server_ip=None):
        key = ec.generate_private_key(ec.SECP256R1())
        return Issued(_build(_name(dn), self.ca.cert.subject, key.public_key(), self.ca.key, server_ip=server_ip), key)

    @staticmethod
    def self_signed(dn):
        key = ec.generate_private_key(ec.SECP256R1())
        return Issued(_build(_name(dn), _name(dn), key.public_key(), key), key)


@pytest.fixture(scope="session")
def pki():
    return Pki()


@pytest.fixture(scope="session")
def tls_cert(pki):
    return pki.issue(TLS_DN)


@pytest.fixture(scope="session")
def self_cert():
    return Pki.self_signed("CN=self-app")


@pytest.fixture
def proxied(settings):
    """The server behind a TLS terminating proxy at PROXY passing certificates in HEADER."""
    settings.IDP_CLIENT_CERT_HEADER = HEADER
    settings.IDP_TRUSTED_PROXIES = [PROXY]
    return settings


def representation(name, self_cert):
    bound = {"tls.client.certificate.bound.access.tokens": "true"}
    common = {"serviceAccountsEnabled": True, "redirectUris": [REDIRECT]}
    return {
        "realm": name, "enabled": True,
        "clients": [
            {"clientId": "tls-app", "clientAuthenticatorType": "client-x509", **common,
             "attributes": {"x509.subjectdn": TLS_DN, "x509.allow.regex.pattern.comparison": "false", **bound}},
            {"clientId": "regex-app", "clientAuthenticatorType": "client-x509", **common,
             "attributes": {"x509.subjectdn": "CN=regex-app-[0-9]+, ?O=Example Org(, ?C=DE)?"}},
            {"clientId": "self-app", "clientAuthenticatorType": "client-x509-self-signed", **common,
             "attributes": {"jwks.string": json.dumps({"keys": [self_cert.jwk]}), "use.jwks.string": "true"}},
            {"clientId": "secret-app", "secret": SECRET, **common, "attributes": bound},
            {"clientId": "public-app", "publicClient": True, "redirectUris": [REDIRECT], "attributes": bound},
        ],
        "users": [{"username": "alice", "enabled": True, "email": "alice@example.org", "emailVerified": True,
                   "firstName": "Alice", "lastName": "Liddell", "realmRoles": [f"default-roles-{name}"]}],
    }


@pytest.fixture
def realm(db, self_cert, fresh_caches):
    return import_realm(representation("m" + uuid.uuid4().hex[:10], self_cert)).realm


@pytest.fixture
def http():
    return HttpClient()


def url(realm, suffix):
    return f"/realms/{realm.name}/protocol/openid-connect/{suffix}"


def with_cert(issued, **headers):
    """The headers of a request the proxy forwards with this certificate."""
    return {META: issued.nginx(), **headers} if issued is not None else headers


def client_credentials(http, realm, client_id, issued=None, **extra):
    return http.post(url(realm, "token"), {"grant_type": "client_credentials", "client_id": client_id},
                     **with_cert(issued, **extra))


def claims(jwt):
    part = jwt.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
