"""``GET /admin/realms/{realm}/keys`` (Keycloak's KeyResource, ``view-realm``): the realm's keys
as KeysMetadataRepresentation, ``active`` (algorithm -> kid of the key that signs) and ``keys``
(each key's kid, algorithm, type, status, public key and certificate in base64 DER, and its
provider: the component id and priority it has in the realm export) and its ``use`` (``SIG``,
``ENC`` for rsa-enc-generated and aes-generated). No private part: an HMAC or AES key (type
``OCT``) is listed, as in Keycloak, without any key material."""
import base64

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from rest_framework.response import Response

from ..models import RealmKey
from .views import RealmResource


def _type(algorithm):
    """Keycloak's KeyType: OCT for a secret, else the key pair's family."""
    if algorithm in (*RealmKey.HMAC_ALGORITHMS, RealmKey.AES):
        return "OCT"
    return {"ES": "EC", "Ed": "OKP"}.get(algorithm[:2], "RSA")


def _b64_der(pem_bytes):
    return base64.b64encode(pem_bytes).decode()


def key_metadata_rep(key):
    rep = {"providerId": key.pk, "providerPriority": key.priority, "kid": key.kid, "status": key.status.upper(),
           "type": _type(key.algorithm), "algorithm": key.algorithm, "use": key.use.upper()}
    if not key.public_key_pem:  # a secret
        return rep
    public = serialization.load_pem_public_key(key.public_key_pem.encode())
    rep["publicKey"] = _b64_der(public.public_bytes(serialization.Encoding.DER,
                                                    serialization.PublicFormat.SubjectPublicKeyInfo))
    if key.certificate_pem:
        cert = x509.load_pem_x509_certificate(key.certificate_pem.encode())
        rep["certificate"] = _b64_der(cert.public_bytes(serialization.Encoding.DER))
        rep["validTo"] = int(cert.not_valid_after_utc.timestamp() * 1000)
    return rep


class Keys(RealmResource):
    required_role = "view-realm"

    def get(self, request, realm):
        keys = list(RealmKey.objects.filter(realm=self.realm).order_by("-priority", "-created"))
        active = {}
        for key in keys:  # highest priority first: the one that signs
            if key.status == RealmKey.ACTIVE:
                active.setdefault(key.algorithm, key.kid)
        return Response({"active": active, "keys": [key_metadata_rep(k) for k in keys]})
