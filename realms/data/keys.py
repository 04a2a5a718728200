"""Realm signing keys: generation, rotation, and the JWK views the protocols need.

Loaded keys (parsed jwcrypto objects, not PEM) are kept per realm and process
(``realms.data.shared_cache``), so signing and verifying on the token path never parse PEM or hit the
database after the first request; a key change reaches every process within about a second."""
from django.db import transaction
from django.db.models.signals import post_delete, post_save
from jwcrypto import jwk

from ..models import RealmKey
from . import crypto
from .shared_cache import LocalCopies

_KTY = {"RS256": ("RSA", {"size": 2048}), "ES256": ("EC", {"crv": "P-256"}), "EdDSA": ("OKP", {"crv": "Ed25519"})}


def generate_key(realm, algorithm="RS256", priority=100, status=RealmKey.ACTIVE, provider_name=None):
    kty, params = _KTY[algorithm]
    key = jwk.JWK.generate(kty=kty, **params)
    return store_key(realm, key, algorithm, priority=priority, status=status,
                     provider_name=provider_name or f"{kty.lower()}-generated")


def store_key(realm, key, algorithm, priority=100, status=RealmKey.ACTIVE, provider_name="rsa", certificate_pem="", kid=None):
    """Persist a jwcrypto key (private part encrypted at rest)."""
    private_pem = key.export_to_pem(private_key=True, password=None).decode()
    public_pem = key.export_to_pem().decode()
    return RealmKey.objects.create(
        realm=realm,
        kid=kid or key.thumbprint(),
        algorithm=algorithm,
        priority=priority,
        status=status,
        provider_name=provider_name,
        private_key_encrypted=crypto.encrypt(private_pem),
        public_key_pem=public_pem,
        certificate_pem=certificate_pem,
    )


@transaction.atomic
def rotate_key(realm, algorithm=None):
    """A new active key with a higher priority; the old active keys of that algorithm go passive
    (they keep verifying until the tokens they signed expire)."""
    algorithm = algorithm or realm.default_signature_algorithm
    current = RealmKey.objects.select_for_update().filter(realm=realm, algorithm=algorithm)
    top = max((k.priority for k in current), default=0)
    current.filter(status=RealmKey.ACTIVE).update(status=RealmKey.PASSIVE)
    new = generate_key(realm, algorithm, priority=top + 10)
    _copies.invalidate(realm.pk)
    return new


class LoadedKeys:
    """The usable keys of one realm: the signer per algorithm and every verifying key by kid.

    ``verified`` remembers tokens whose signature one of these keys verified ({token: payload}),
    for bearers that present the same token on every request: it goes with this object when a
    key of the realm changes, so it never outlives the key that verified a token."""

    VERIFIED_MAX = 4096

    def __init__(self, rows):
        self.signers = {}
        self.by_kid = {}
        self.verified = {}
        for row in rows:  # ordered by priority, highest first
            if row.status == RealmKey.DISABLED:
                continue
            key = jwk.JWK.from_pem(row.private_key_pem.encode())
            key.update(kid=row.kid, alg=row.algorithm, use=row.use)
            self.by_kid[row.kid] = (row.algorithm, key)
            if row.status == RealmKey.ACTIVE:
                self.signers.setdefault(row.algorithm, (row.kid, key))

    def remember(self, token, payload):
        if len(self.verified) >= self.VERIFIED_MAX:
            self.verified.clear()  # a bound, not an LRU: tokens are short-lived and re-verified on a miss
        self.verified[token] = payload

    def signer(self, algorithm):
        """(kid, jwk) of the active key for ``algorithm`` with the highest priority."""
        return self.signers.get(algorithm)

    def jwks(self):
        """Public JWKS of active and passive keys, each with kid, alg and use."""
        out = []
        for kid, (alg, key) in self.by_kid.items():
            public = key.export_public(as_dict=True)
            public.update(kid=kid, alg=alg, use="sig")
            out.append(public)
        return {"keys": out}


def _load(realm_id):
    return LoadedKeys(list(RealmKey.objects.filter(realm_id=realm_id).order_by("-priority", "-created")))


_copies = LocalCopies("realm-keys", _load)


def realm_keys(realm) -> LoadedKeys:
    return _copies.get(realm.pk)


def _on_key_change(sender, instance, **kwargs):
    _copies.invalidate(instance.realm_id)


def connect_signals():
    """Drop a realm's keys when one changes; called from ``RealmsConfig.ready``."""
    post_save.connect(_on_key_change, sender=RealmKey, dispatch_uid="realmkey-save")
    post_delete.connect(_on_key_change, sender=RealmKey, dispatch_uid="realmkey-delete")
