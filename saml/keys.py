"""The realm's SAML signing credentials: its active RSA key and that key's X.509 certificate.

SAML needs certificates (metadata, ``ds:KeyInfo``). Keys imported from Keycloak bring theirs;
keys generated here have none, so the first SAML use gives the key a self-signed certificate
(as Keycloak's rsa-generated provider does) and stores it on the key row, so metadata and
signatures keep naming the same certificate afterwards.
"""
import functools
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from realms.models import RealmKey
from realms.representation import self_signed

ALGORITHM = "RS256"


@dataclass(frozen=True)
class Credential:
    kid: str
    private_key: object
    certificate: x509.Certificate

    @property
    def certificate_b64(self):
        import base64

        return base64.b64encode(self.certificate.public_bytes(serialization.Encoding.DER)).decode()


@functools.lru_cache(maxsize=256)
def _load(kid, private_pem, certificate_pem):
    private_key = serialization.load_pem_private_key(private_pem.encode(), password=None)
    return Credential(kid, private_key, x509.load_pem_x509_certificate(certificate_pem.encode()))


def _certificate_pem(row):
    if not row.certificate_pem:
        private_key = serialization.load_pem_private_key(row.private_key_pem.encode(), password=None)
        der = self_signed(private_key, row.realm.name)
        row.certificate_pem = x509.load_der_x509_certificate(der).public_bytes(serialization.Encoding.PEM).decode()
        RealmKey.objects.filter(pk=row.pk, certificate_pem="").update(certificate_pem=row.certificate_pem)
        row.refresh_from_db(fields=["certificate_pem"])
    return row.certificate_pem


def _rows(realm, statuses):
    return list(RealmKey.objects.select_related("realm").filter(
        realm=realm, algorithm=ALGORITHM, status__in=statuses).order_by("-priority", "-created"))


def signing_credential(realm) -> Credential:
    """The active RSA key with the highest priority; LookupError if the realm has none."""
    rows = _rows(realm, [RealmKey.ACTIVE])
    if not rows:
        raise LookupError(f"realm {realm.name} has no active RSA key")
    row = rows[0]
    return _load(row.kid, row.private_key_pem, _certificate_pem(row))


def published_credentials(realm):
    """Active and passive RSA keys: what the metadata lists for verifying our signatures."""
    return [_load(row.kid, row.private_key_pem, _certificate_pem(row))
            for row in _rows(realm, [RealmKey.ACTIVE, RealmKey.PASSIVE])]
