"""The realm's SAML signing credentials: its active RSA key and that key's X.509 certificate.

SAML needs certificates (metadata, ``ds:KeyInfo``). Keys imported from Keycloak bring theirs;
keys generated here have none, so the first SAML use gives the key a self-signed certificate
(as Keycloak's rsa-generated provider does) and stores it on the key row, so metadata and
signatures keep naming the same certificate afterwards.

The credentials are kept with the realm's loaded keys (``realms.data.keys.realm_keys``), whose
copy is replaced whenever a key of the realm changes: a sign-in reads no key row.
"""
import functools
import weakref
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from realms.data.keys import realm_keys
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


# The realm's loaded keys -> (its signing Credential or None, its published Credentials): an
# entry goes with the loaded keys it was read for, so it never outlives a key change.
_credentials = weakref.WeakKeyDictionary()


def _of(realm):
    loaded = realm_keys(realm)
    found = _credentials.get(loaded)
    if found is None:
        rows = list(RealmKey.objects.select_related("realm").filter(
            realm=realm, algorithm=ALGORITHM, status__in=[RealmKey.ACTIVE, RealmKey.PASSIVE],
        ).order_by("-priority", "-created"))
        # A certificate made now is stored in the request's transaction, which may yet roll back:
        # kept only once read back from a row.
        settled = all(row.certificate_pem for row in rows)
        published = tuple(_load(row.kid, row.private_key_pem, _certificate_pem(row)) for row in rows)
        active = next((cred for row, cred in zip(rows, published, strict=True) if row.status == RealmKey.ACTIVE),
                      None)
        found = (active, published)
        if settled:
            _credentials[loaded] = found
    return found


def signing_credential(realm) -> Credential:
    """The active RSA key with the highest priority; LookupError if the realm has none."""
    active = _of(realm)[0]
    if active is None:
        raise LookupError(f"realm {realm.name} has no active RSA key")
    return active


def published_credentials(realm):
    """Active and passive RSA keys: what the metadata lists for verifying our signatures."""
    return _of(realm)[1]
