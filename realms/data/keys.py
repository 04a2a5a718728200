"""Realm keys (signing key pairs, HMAC secrets, encryption key pairs and AES secrets):
generation, rotation, and the JWK views the protocols need.

Loaded keys (parsed jwcrypto objects, not PEM) are kept per realm and process
(``realms.data.shared_cache``), so signing and verifying on the token path never parse PEM or hit the
database after the first request; a key change reaches every process within about a second."""
import base64
import secrets
import uuid

from django.db import transaction
from django.db.models.signals import post_delete, post_save
from jwcrypto import jwk

from ..models import Realm, RealmKey
from . import crypto
from .realm_cache import max_realms
from .shared_cache import LocalCopies

_RSA = ("RSA", {"size": 2048})
_KTY = {**dict.fromkeys(("RS256", "RS384", "RS512", "PS256", "PS384", "PS512"), _RSA),
        "ES256": ("EC", {"crv": "P-256"}), "ES384": ("EC", {"crv": "P-384"}), "ES512": ("EC", {"crv": "P-521"}),
        "EdDSA": ("OKP", {"crv": "Ed25519"}), **dict.fromkeys(RealmKey.ENCRYPTION_ALGORITHMS, _RSA)}
SECRET_ALGORITHMS = (*RealmKey.HMAC_ALGORITHMS, RealmKey.AES)
# Keycloak's provider of a generated key of each algorithm (a KeyProvider component's providerId).
GENERATED = {**{alg: {"RSA": "rsa-generated", "EC": "ecdsa-generated", "OKP": "eddsa-generated"}[kty]
                for alg, (kty, _) in _KTY.items()},
             **dict.fromkeys(RealmKey.ENCRYPTION_ALGORITHMS, "rsa-enc-generated"),
             **dict.fromkeys(RealmKey.HMAC_ALGORITHMS, "hmac-generated"), RealmKey.AES: "aes-generated"}
HMAC_SECRET_SIZE = 64  # bytes: Keycloak 26's default for hmac-generated, as long as an HS512 signature
AES_SECRET_SIZE = 16  # bytes: Keycloak's default for aes-generated


def use_of(algorithm):
    """``enc`` for the keys others encrypt to (and AES), ``sig`` for the signing ones."""
    return RealmKey.ENC if algorithm in (*RealmKey.ENCRYPTION_ALGORITHMS, RealmKey.AES) else RealmKey.SIG


def new_key(algorithm, key_size=2048):
    """A fresh jwcrypto key pair for ``algorithm`` (``key_size``: RSA's modulus bits)."""
    kty, params = _KTY[algorithm]
    return jwk.JWK.generate(kty=kty, **(dict(params, size=key_size) if kty == "RSA" else params))


def generate_key(realm, algorithm="RS256", priority=100, status=RealmKey.ACTIVE, provider_name=None, key_size=2048,
                 secret_size=HMAC_SECRET_SIZE):
    provider_id = GENERATED[algorithm]
    if algorithm in SECRET_ALGORITHMS:
        row = RealmKey(realm=realm, algorithm=algorithm, priority=priority, status=status, use=use_of(algorithm),
                       provider_name=provider_name or provider_id, provider_id=provider_id)
        set_secret(row, new_secret(secret_size))
        row.save()
        return row
    return store_key(realm, new_key(algorithm, key_size), algorithm, priority=priority, status=status,
                     provider_name=provider_name or provider_id, provider_id=provider_id)


def store_key(realm, key, algorithm, priority=100, status=RealmKey.ACTIVE, provider_name="rsa", certificate_pem="", kid=None,
              provider_id="rsa"):
    """Persist a jwcrypto key."""
    row = RealmKey(realm=realm, algorithm=algorithm, priority=priority, status=status, provider_name=provider_name,
                   provider_id=provider_id, certificate_pem=certificate_pem, use=use_of(algorithm))
    set_material(row, key, kid)
    row.save()
    return row


def set_material(row, key, kid=None):
    """Put a jwcrypto key pair into ``row`` (not saved), the private part encrypted at rest."""
    row.kid = kid or key.thumbprint()
    row.private_key_encrypted = crypto.encrypt(key.export_to_pem(private_key=True, password=None).decode())
    row.public_key_pem = key.export_to_pem().decode()


def new_secret(size=HMAC_SECRET_SIZE):
    return secrets.token_bytes(size)


def set_secret(row, secret, kid=None):
    """Put an HMAC or AES secret into ``row`` (not saved), encrypted at rest like a private key,
    under ``kid`` (an import's), else a new one (a random UUID, as Keycloak names a generated
    secret), since it is a new key."""
    row.kid = kid or str(uuid.uuid4())
    row.private_key_encrypted = crypto.encrypt(base64.urlsafe_b64encode(secret).decode())
    row.public_key_pem = ""


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
    """The usable keys of one realm: the signer per algorithm and every verifying key by kid;
    apart, its HMAC secrets (``hmac_signer``, ``hmac_secrets``: HS512, refresh tokens;
    ``secrets``: every HS algorithm), which sign only what this server alone reads and so are
    never in ``by_kid`` (the tokens others verify) nor in the JWKS; and its encryption key pairs
    (``decrypters``), whose public part the JWKS publishes with ``use: enc``. AES secrets are
    Keycloak's internal keys: stored, never loaded.

    ``verified`` remembers tokens whose signature one of these keys verified ({token: payload}),
    for bearers that present the same token on every request: it goes with this object when a
    key of the realm changes, so it never outlives the key that verified a token."""

    VERIFIED_MAX = 4096

    def __init__(self, rows, realm_id=None):
        self.realm_id = realm_id
        self.signers = {}
        self.by_kid = {}
        self.verified = {}
        self.hmac_signer = None  # (kid, secret) of the active HS512 key with the highest priority
        self.hmac_secrets = {}  # kid -> secret of every enabled HS512 key
        self.secrets = {}  # kid -> (algorithm, secret) of every enabled HMAC key
        self.decrypters = {}  # kid -> (algorithm, jwk) of every enabled encryption key, highest priority first
        for row in rows:  # ordered by priority, highest first
            if row.status == RealmKey.DISABLED or row.algorithm == RealmKey.AES:
                continue
            # Opened here, where it is kept for the realm, not also in crypto's cache of opened
            # values: with a thousand realms that kept every served realm's key (decision 0107).
            opened = crypto.decrypt(row.private_key_encrypted, cached=False)
            if row.algorithm in RealmKey.HMAC_ALGORITHMS:
                secret = base64.urlsafe_b64decode(opened)  # as set_secret seals it
                self.secrets[row.kid] = (row.algorithm, secret)
                if row.status == RealmKey.ACTIVE:
                    self.signers.setdefault(row.algorithm, (row.kid, secret))
                if row.algorithm == RealmKey.HMAC:
                    self.hmac_secrets[row.kid] = secret
                    if row.status == RealmKey.ACTIVE and self.hmac_signer is None:
                        self.hmac_signer = (row.kid, secret)
                continue
            key = _stored_key(opened)
            key.update(kid=row.kid, alg=row.algorithm, use=row.use)
            if row.use == RealmKey.ENC:
                self.decrypters[row.kid] = (row.algorithm, key)
                continue
            self.by_kid[row.kid] = (row.algorithm, key)
            if row.status == RealmKey.ACTIVE:
                self.signers.setdefault(row.algorithm, (row.kid, key))

    def remember(self, token, payload):
        if len(self.verified) >= self.VERIFIED_MAX:
            self.verified.clear()  # a bound, not an LRU: tokens are short-lived and re-verified on a miss
        self.verified[token] = payload

    def signer(self, algorithm):
        """(kid, key) of the active key for ``algorithm`` with the highest priority: a jwcrypto key,
        or the secret (bytes) of an HS algorithm. A realm left without one (its keys deleted or
        disabled) gets, as in Keycloak, a generated fallback key first, named
        ``fallback-<algorithm>`` with priority -100, so signing never stops. (Refresh tokens are
        signed by ``hmac_signer`` or, without one, the realm's derived key, ``oidc.tokens``.)"""
        found = self.signers.get(algorithm)
        if found is None and self.realm_id is not None and (
                algorithm in RealmKey.HMAC_ALGORITHMS or algorithm in _KTY and use_of(algorithm) == RealmKey.SIG):
            found = _fallback(self.realm_id, algorithm)
        return found

    def decryption_key(self, kid, algorithm):
        """The private jwk of the enabled encryption key ``kid`` for ``algorithm`` (without a kid:
        the one of that algorithm with the highest priority), or None: what decrypts a JWE a client
        encrypted to the realm's JWKS."""
        if kid is not None:
            found = self.decrypters.get(kid)
            return found[1] if found is not None and found[0] == algorithm else None
        return next((key for alg, key in self.decrypters.values() if alg == algorithm), None)

    def jwks(self):
        """Public JWKS of active and passive keys, each with kid, alg and use: the signing keys,
        then the encryption keys (``use: enc``). Never a secret."""
        out = []
        for use, keys in ((RealmKey.SIG, self.by_kid), (RealmKey.ENC, self.decrypters)):
            for kid, (alg, key) in keys.items():
                public = key.export_public(as_dict=True)
                public.update(kid=kid, alg=alg, use=use)
                out.append(public)
        return {"keys": out}


def _stored_key(pem):
    """A stored private key as a jwk, without RSA's consistency checks: the key was checked when
    it was stored (made here, or parsed with the checks from the Admin API or an import), and
    checking it again (twice: the PEM, then jwcrypto's own key) was most of the CPU a realm's
    first request in a process costs, paid again by a realm dropped from the bounded cache
    (decision 0107)."""
    key = jwk.JWK()
    key.unsafe_skip_rsa_key_validation = True
    key.import_from_pem(pem.encode())
    return key


def _load(realm_id):
    return LoadedKeys(list(RealmKey.objects.filter(realm_id=realm_id).order_by("-priority", "-created")), realm_id)


def _fallback(realm_id, algorithm):
    with transaction.atomic():
        realm = Realm.objects.select_for_update().get(pk=realm_id)  # one fallback, whichever worker asks first
        if not RealmKey.objects.filter(realm_id=realm_id, algorithm=algorithm, status=RealmKey.ACTIVE).exists():
            generate_key(realm, algorithm, priority=-100, provider_name=f"fallback-{algorithm}")
    return _copies.get(realm_id).signers.get(algorithm)


_copies = LocalCopies("realm-keys", _load, max_entries=max_realms)


def realm_keys(realm) -> LoadedKeys:
    return _copies.get(realm.pk)


def _on_key_change(sender, instance, **kwargs):
    _copies.invalidate(instance.realm_id)


def connect_signals():
    """Drop a realm's keys when one changes; called from ``RealmsConfig.ready``."""
    post_save.connect(_on_key_change, sender=RealmKey, dispatch_uid="realmkey-save")
    post_delete.connect(_on_key_change, sender=RealmKey, dispatch_uid="realmkey-delete")
