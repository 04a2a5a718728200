"""The realm's signing keys as Keycloak's KeyProvider components (``providerType``
``org.keycloak.keys.KeyProvider``) on ``/admin/realms/{realm}/components``: listed, read, created,
updated and deleted as kcadm and Terraform script key rotation. One key row is one component
(``RealmKey``); the components resource (``federation.ldap.api``) hands these requests here.

Providers: ``rsa-generated`` (``keySize``), ``ecdsa-generated`` (ES256 on P-256),
``eddsa-generated`` (Ed25519), ``rsa`` (a PEM key pair brought in), ``hmac-generated`` (an HS256,
HS384 or HS512 secret, ``secretSize`` in bytes: HS512 signs refresh tokens, decision 0067; any of
them a client's access or ID tokens, decision 0084), ``rsa-enc-generated`` (an RSA-OAEP or
RSA-OAEP-256 key pair clients encrypt request objects to) and ``aes-generated`` (a secret Keycloak
keeps for itself: stored so a realm export round-trips, used by nothing here). Config ``priority``,
``enabled`` and ``active`` decide which key signs (the active one with the highest priority) and
which verify (every enabled one; the public ones in the JWKS); a change reaches every worker through
the key cache (``data.keys``). RSA1_5 and an algorithm a provider does not have are refused rather
than stored unread. No private part is ever answered: ``rsa``'s ``privateKey`` shows as
``**********`` and, sent back so, keeps the stored key; a secret is not in the representation at
all, as in Keycloak."""
import base64

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.db import transaction
from jwcrypto import jwk
from rest_framework import status
from rest_framework.response import Response

from ..audit import admin_events
from ..data import keys
from ..models import RealmKey
from ..representation.components import EC_CURVES, KEY_PROVIDER, load_cert, load_private
from ..representation.fields import RepresentationError
from . import errors
from .query import location

SECRET_VALUE = "**********"  # Keycloak's ComponentRepresentation.SECRET_VALUE
KEY_SIZES = ("2048", "3072", "4096")  # Keycloak also offers 1024: too weak to sign with
SECRET_SIZES = ("16", "24", "32", "64", "128", "256", "512")  # bytes, Keycloak's choices
# providerId -> (algorithm, {config name: (label, allowed values)}): Keycloak's properties and labels.
PROVIDERS = {
    "rsa-generated": ("RS256", {"keySize": ("Key size", KEY_SIZES), "algorithm": ("Algorithm", ("RS256",))}),
    "rsa": ("RS256", {"algorithm": ("Algorithm", ("RS256",))}),
    "ecdsa-generated": ("ES256", {"ecdsaEllipticCurveKey": ("Elliptic Curve", ("P-256",))}),
    "eddsa-generated": ("EdDSA", {"eddsaEllipticCurveKey": ("Elliptic Curve", ("Ed25519",))}),
    # HS512 by default, as in Keycloak 26: the key a realm's refresh tokens need.
    "hmac-generated": (RealmKey.HMAC, {"secretSize": ("Secret size", SECRET_SIZES),
                                       "algorithm": ("Algorithm", RealmKey.HMAC_ALGORITHMS)}),
    "rsa-enc-generated": ("RSA-OAEP", {"keySize": ("Key size", KEY_SIZES),
                                       "algorithm": ("Algorithm", RealmKey.ENCRYPTION_ALGORITHMS)}),
    "aes-generated": (RealmKey.AES, {"secretSize": ("AES Key size", ("16", "24", "32"))}),
}
_DEFAULT_SECRET_SIZE = {RealmKey.AES: keys.AES_SECRET_SIZE}
_STATUS = {"Priority": "priority", "Enabled": "enabled", "Active": "active"}


def _single(config, name, label):
    values = config.get(name)
    if values is not None and len(values) > 1:
        raise errors.Invalid(f"'{label}' should be a single entry")
    return values[0] if values else None


def _options(values):
    return values[0] if len(values) == 1 else ", ".join(values[:-1]) + " or " + values[-1]


def _config(body):
    config = body.get("config") or {}
    if not isinstance(config, dict) or not all(isinstance(v, list) and all(isinstance(x, str) for x in v)
                                                for v in config.values()):
        raise errors.Invalid("config must map names to lists of strings")
    return config


def _settings(provider_id, config, key=None):
    """(priority, status, {option: value}) from ``config`` (Keycloak's checks and messages); what is
    absent keeps ``key``'s value, or Keycloak's default for a new key."""
    priority = _single(config, "priority", "Priority")
    if priority is not None:
        try:
            priority = int(priority)
        except ValueError:
            raise errors.Invalid("'Priority' should be a number") from None
    flags = {}
    for name, label in (("enabled", "Enabled"), ("active", "Active")):
        value = _single(config, name, label)
        if value is not None and value not in ("true", "false"):
            raise errors.Invalid(f"'{label}' should be 'true' or 'false'")
        flags[name] = value
    options = {}
    for name, (label, allowed) in PROVIDERS[provider_id][1].items():
        value = _single(config, name, label)
        if value is not None and value not in allowed:
            raise errors.Invalid(f"'{label}' should be {_options(allowed)}")
        options[name] = value
    old_enabled = key is None or key.status != RealmKey.DISABLED
    old_active = key is None or key.status == RealmKey.ACTIVE
    enabled = old_enabled if flags["enabled"] is None else flags["enabled"] == "true"
    active = old_active if flags["active"] is None else flags["active"] == "true"
    key_status = RealmKey.DISABLED if not enabled else RealmKey.ACTIVE if active else RealmKey.PASSIVE
    return (key.priority if key is not None and priority is None else priority or 0), key_status, options


def _key_size(key):
    return str(serialization.load_pem_public_key(key.public_key_pem.encode()).key_size)


def _option(key, name, allowed):
    """The stored value of a provider property: sizes read off the key itself."""
    if name == "keySize":
        return _key_size(key)
    if name == "secretSize":
        return str(len(key.secret))
    if name == "algorithm":  # a fallback key of the realm's default algorithm may be PS256, RS512...
        return key.algorithm
    if name == "ecdsaEllipticCurveKey":
        return next(curve for curve, alg in EC_CURVES.items() if alg == key.algorithm)
    return allowed[0]


def rep(key):
    """Keycloak's ComponentRepresentation of a key: the provider's own properties only."""
    config = {"priority": [str(key.priority)], "enabled": ["true" if key.status != RealmKey.DISABLED else "false"],
              "active": ["true" if key.status == RealmKey.ACTIVE else "false"]}
    for name, (_, allowed) in PROVIDERS.get(key.provider_id, ("", {}))[1].items():
        config[name] = [_option(key, name, allowed)]
    if key.provider_id == "rsa":
        config["privateKey"] = [SECRET_VALUE]
        if key.certificate_pem:
            cert = x509.load_pem_x509_certificate(key.certificate_pem.encode())
            config["certificate"] = [base64.b64encode(cert.public_bytes(serialization.Encoding.DER)).decode()]
    return {"id": key.pk, "name": key.provider_name, "providerId": key.provider_id, "providerType": KEY_PROVIDER,
            "parentId": key.realm_id, "config": config}


def listed(realm, params):
    """The reps of the realm's keys for ``GET /components`` with its ``parent``, ``type`` and ``name``."""
    if params.get("type") not in (None, KEY_PROVIDER) or params.get("parent") not in (None, realm.pk):
        return []
    q = RealmKey.objects.filter(realm=realm)
    if params.get("name") is not None:
        q = q.filter(provider_name=params["name"])
    return [rep(k) for k in q.order_by("provider_name", "pk")]


def find(realm, component_id):
    return RealmKey.objects.filter(realm=realm, pk=component_id).first()


def _material(config, key=None):
    """(jwk, certificate PEM) of an ``rsa`` provider's ``privateKey`` and ``certificate``; None when
    the stored key stays (``**********`` or nothing sent on an update)."""
    text = _single(config, "privateKey", "Private RSA Key")
    if text in (None, SECRET_VALUE) and key is not None:
        return None
    if not text:
        raise errors.Invalid("'Private RSA Key' is required")
    try:
        private = load_private("privateKey", text, rsa.RSAPrivateKey)
    except RepresentationError:
        raise errors.Invalid("Failed to decode private key") from None
    cert_text = _single(config, "certificate", "X509 Certificate")
    try:
        cert = load_cert("certificate", cert_text) if cert_text else None
    except RepresentationError:
        raise errors.Invalid("Failed to decode certificate") from None
    public = private.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    if cert is not None and cert.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo) != public:
        raise errors.Invalid("Certificate does not match private key")
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return jwk.JWK.from_pem(pem), cert.public_bytes(serialization.Encoding.PEM).decode() if cert else ""


def _name(body, default):
    name = str(body.get("name") or default)
    if len(name) > 255:
        raise errors.Invalid("name is too long (255 characters at most)")
    return name


def _event(view, operation, key):
    admin_events.record(view.realm, operation, "COMPONENT", f"components/{key.pk}", auth=view.auth_details(),
                        representation=lambda: rep(key))


def _free_kid(material, key=None):
    if RealmKey.objects.filter(kid=material.thumbprint()).exclude(pk=getattr(key, "pk", None)).exists():
        raise errors.Conflict("This key pair is already in use by a key provider")


def create(view, request, body):
    provider_id = body.get("providerId")
    if provider_id not in PROVIDERS:
        raise errors.Invalid(f"Key provider {str(provider_id)[:64]!r} is not supported: this server has "
                             f"{', '.join(PROVIDERS)} keys only")
    config = _config(body)
    priority, key_status, options = _settings(provider_id, config)
    name = _name(body, provider_id)
    algorithm = options.get("algorithm") or PROVIDERS[provider_id][0]
    with transaction.atomic():
        if provider_id == "rsa":
            material, certificate = _material(config)
            _free_kid(material)
            key = keys.store_key(view.realm, material, algorithm, priority=priority, status=key_status,
                                 provider_name=name, provider_id="rsa", certificate_pem=certificate)
        else:
            key = keys.generate_key(view.realm, algorithm, priority=priority, status=key_status, provider_name=name,
                                    key_size=int(options.get("keySize") or 2048),
                                    secret_size=int(options.get("secretSize")
                                                    or _DEFAULT_SECRET_SIZE.get(algorithm, keys.HMAC_SECRET_SIZE)))
        _event(view, "CREATE", key)
    return Response(status=status.HTTP_201_CREATED,
                    headers={"Location": location(request, f"{view.realm.name}/components/{key.pk}")})


def update(view, key, body):
    config = _config(body)
    key.priority, key.status, options = _settings(key.provider_id, config, key)
    key.provider_name = _name(body, key.provider_name)
    replacement = secret = None
    if key.provider_id == "rsa":
        found = _material(config, key)
        if found is not None:
            replacement, key.certificate_pem = found
    elif options.get("keySize") and options["keySize"] != _key_size(key):
        # Keycloak generates a new key pair when the size changes.
        replacement = keys.new_key(key.algorithm, int(options["keySize"]))
        key.certificate_pem = ""
    elif options.get("secretSize") and options["secretSize"] != str(len(key.secret)):
        secret = keys.new_secret(int(options["secretSize"]))  # so does Keycloak, under a new kid
    if options.get("algorithm"):  # the same secret or key pair serves each algorithm of its provider
        key.algorithm = options["algorithm"]
    with transaction.atomic():
        if replacement is not None:
            _free_kid(replacement, key)
            keys.set_material(key, replacement)
        if secret is not None:
            keys.set_secret(key, secret)
        key.save()  # the key cache of every worker drops the realm's keys (data.keys)
        _event(view, "UPDATE", key)
    return Response(status=status.HTTP_204_NO_CONTENT)


def delete(view, key):
    with transaction.atomic():
        _event(view, "DELETE", key)
        key.delete()
    return Response(status=status.HTTP_204_NO_CONTENT)
