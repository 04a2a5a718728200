"""Components: the realm's keys (Keycloak's KeyProvider components rsa, rsa-generated,
ecdsa(-generated), eddsa-generated, rsa-enc-generated, hmac-generated, aes-generated) and the client
registration policies (``Component`` rows, Keycloak's defaults when a representation has none);
other component types are reported, not imported."""
import base64
import hashlib
from datetime import UTC, datetime, timedelta

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import NameOID
from jwcrypto import jwk

from ..data import keys
from ..models import Component, RealmKey
from ..users.profile import config as upconfig
from ..users.profile.validators import ConfigError
from .fields import RepresentationError, as_bool, as_dict, as_int, as_list, as_multi_map, as_str
from .user_storage import USER_STORAGE

KEY_PROVIDER = "org.keycloak.keys.KeyProvider"
REGISTRATION_POLICY = "org.keycloak.services.clientregistration.policy.ClientRegistrationPolicy"
_MAPPER_TYPES = ["saml-user-attribute-mapper", "oidc-usermodel-attribute-mapper", "saml-user-property-mapper",
                 "oidc-usermodel-property-mapper", "oidc-full-name-mapper", "oidc-address-mapper",
                 "oidc-sha256-pairwise-sub-mapper", "saml-role-list-mapper"]
_GENERIC = [("Allowed Protocol Mapper Types", "allowed-protocol-mappers", {"allowed-protocol-mapper-types": _MAPPER_TYPES}),
            ("Allowed Client Scopes", "allowed-client-templates",
             {"allowed-client-scopes": [], "allow-default-scopes": ["true"]})]
# Keycloak's DefaultClientRegistrationPolicies: (name, providerId, subType, config) a realm gets when
# it has no policy at all (a new realm, or an import without any).
DEFAULT_POLICIES = [
    ("Trusted Hosts", "trusted-hosts", "anonymous", {"trusted-hosts": [], "client-uris-must-match": ["true"],
                                                     "host-sending-registration-request-must-match": ["true"]}),
    ("Consent Required", "consent-required", "anonymous", {}),
    ("Full Scope Disabled", "scope", "anonymous", {}),
    ("Max Clients Limit", "max-clients", "anonymous", {"max-clients": ["200"]}),
    *((name, provider, sub, config) for sub in ("anonymous", "authenticated") for name, provider, config in _GENERIC),
]

# providerId -> key family; the family's algorithm comes from the component's config (RSA's
# ``algorithm``, the EC curve), as in Keycloak.
_KEY_ALGORITHMS = {
    "rsa": "RS256", "rsa-generated": "RS256", "ecdsa-generated": "ES256", "ecdsa": "ES256",
    "eddsa-generated": "EdDSA", "rsa-enc-generated": "RSA-OAEP",
}
# Secrets (Keycloak's ``secret``, base64url, under its ``kid``): the provider's algorithms, the first its default.
SECRET_PROVIDERS = {"hmac-generated": (RealmKey.HMAC, *RealmKey.HMAC_ALGORITHMS), "aes-generated": (RealmKey.AES,)}
RSA_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512")
EC_CURVES = {"P-256": "ES256", "P-384": "ES384", "P-521": "ES512"}
_CURVES = {"ES256": ("ecdsaEllipticCurveKey", "P-256"), "EdDSA": ("eddsaEllipticCurveKey", "Ed25519")}
_PRIVATE_KEY_CONFIG = {"RS256": "privateKey", "ES256": "ecdsaPrivateKey", "EdDSA": "eddsaPrivateKey",
                       "RSA-OAEP": "privateKey"}
_KEY_TYPES = {"RS256": rsa.RSAPrivateKey, "ES256": ec.EllipticCurvePrivateKey, "EdDSA": ed25519.Ed25519PrivateKey,
              "RSA-OAEP": rsa.RSAPrivateKey}
_SPKI = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def _der_or_pem(path, text):
    text = text.strip()
    if text.startswith("-----"):
        return text.encode(), True
    try:
        return base64.b64decode("".join(text.split()), validate=True), False
    except ValueError:
        raise RepresentationError(path, "expected a base64 DER or PEM value") from None


def load_private(path, text, kind):
    raw, is_pem = _der_or_pem(path, text)
    loader = serialization.load_pem_private_key if is_pem else serialization.load_der_private_key
    try:
        key = loader(raw, password=None)
    except ValueError:
        raise RepresentationError(path, "not a readable private key") from None
    if not isinstance(key, kind):
        raise RepresentationError(path, "wrong key type for this provider")
    return key


def load_cert(path, text):
    raw, is_pem = _der_or_pem(path, text)
    try:
        return x509.load_pem_x509_certificate(raw) if is_pem else x509.load_der_x509_certificate(raw)
    except ValueError:
        raise RepresentationError(path, "not a readable X.509 certificate") from None


def parse_components(components, p):
    out = []
    for provider_type, entries in components.items():
        type_path = f'components["{provider_type}"]'
        for i, comp in enumerate(as_list(entries, type_path)):
            path = f"{type_path}[{i}]"
            comp = as_dict(comp, path)
            provider_id = comp.get("providerId")
            if provider_type in (USER_STORAGE, upconfig.PROVIDER_TYPE):
                continue  # read by user_storage and parse_user_profile
            if provider_type == REGISTRATION_POLICY:
                v = p.take(comp, path, {"id": as_str, "name": as_str, "providerId": as_str, "subType": as_str,
                                        "config": as_multi_map}, derived={"subComponents", "parentId"})
                out.append({"_path": path, "policy": True, "id": v.get("id"), "name": v.get("name") or provider_id,
                            "provider_id": provider_id, "sub_type": v.get("subType") or "",
                            "config": v.get("config", {})})
                continue
            if provider_type == KEY_PROVIDER and provider_id in SECRET_PROVIDERS:
                key = _secret_key(comp, path, provider_id, p)
                if key is not None:
                    out.append(key)
                continue
            if provider_type != KEY_PROVIDER or provider_id not in _KEY_ALGORITHMS:
                p.unsupported(path, f"component {provider_id!r} ({provider_type}) not supported, not imported")
                continue
            v = p.take(comp, path, {"id": as_str, "name": as_str, "providerId": as_str, "config": as_multi_map},
                       derived={"subType", "subComponents", "parentId"})
            config = {k: (x[0] if x else "") for k, x in v.get("config", {}).items()}
            cpath = f"{path}.config"
            family = _KEY_ALGORITHMS[provider_id]
            algorithm = family
            if family == "RS256":
                algorithm = config.get("algorithm") or "RS256"
                if config.get("keyUse", "SIG").upper() != "SIG" or algorithm not in RSA_ALGORITHMS:
                    p.unsupported(path, f"key {algorithm}/{config.get('keyUse')} not supported "
                                  f"({', '.join(RSA_ALGORITHMS)} signing keys only), not imported")
                    continue
            elif family == "RSA-OAEP":
                algorithm = config.get("algorithm") or "RSA-OAEP"
                if config.get("keyUse", "ENC").upper() != "ENC" or algorithm not in RealmKey.ENCRYPTION_ALGORITHMS:
                    p.unsupported(path, f"key {algorithm}/{config.get('keyUse')} not supported "
                                  f"({', '.join(RealmKey.ENCRYPTION_ALGORITHMS)} encryption keys only), not imported")
                    continue
            elif family == "ES256":
                curve = config.get("ecdsaEllipticCurveKey") or "P-256"
                if curve not in EC_CURVES:
                    p.unsupported(path, f"curve {curve!r} not supported ({', '.join(EC_CURVES)}), not imported")
                    continue
                algorithm = EC_CURVES[curve]
            else:
                curve_key, curve = _CURVES[family]
                if config.get(curve_key, curve) != curve:
                    p.unsupported(path, f"curve {config[curve_key]!r} not supported ({curve} only), not imported")
                    continue
            private_text = config.get(_PRIVATE_KEY_CONFIG[family])
            out.append({
                "_path": path, "id": v.get("id"), "name": v.get("name") or provider_id, "algorithm": algorithm,
                "provider_id": provider_id,
                "private": (load_private(f"{cpath}.{_PRIVATE_KEY_CONFIG[family]}", private_text,
                                          _KEY_TYPES[family]) if private_text else None),
                "certificate": (load_cert(f"{cpath}.certificate", config["certificate"])
                                if config.get("certificate") else None),
                **_state(config, cpath),
            })
    return out


def parse_user_profile(components, p):
    """The realm's declarative user profile (``{"id", "config"}``) or None: its UPConfig checked
    as the Admin API checks a PUT, so that a profile the server cannot honour is refused here too."""
    entries = as_list(components.get(upconfig.PROVIDER_TYPE, []), f'components["{upconfig.PROVIDER_TYPE}"]')
    if len(entries) > 1:
        raise RepresentationError(f'components["{upconfig.PROVIDER_TYPE}"]', "only one user profile is allowed")
    if not entries:
        return None
    path = f'components["{upconfig.PROVIDER_TYPE}"][0]'
    v = p.take(as_dict(entries[0], path), path, {"id": as_str, "name": as_str, "providerId": as_str,
                                                 "config": as_multi_map},
               derived={"subType", "subComponents", "parentId"})
    if v.get("providerId", upconfig.PROVIDER_ID) != upconfig.PROVIDER_ID:
        raise RepresentationError(f"{path}.providerId", f"only {upconfig.PROVIDER_ID} is supported")
    config = v.get("config", {})
    unknown = set(config) - {upconfig.CONFIG_KEY}
    if unknown:
        raise RepresentationError(f"{path}.config", f"unknown option(s) {', '.join(sorted(unknown))}")
    text = (config.get(upconfig.CONFIG_KEY) or [None])[0]
    if text is None:  # Keycloak's default profile
        return None
    try:
        return {"id": v.get("id"), "config": upconfig.parse(text)}
    except ConfigError as exc:
        raise RepresentationError(f"{path}.config.{upconfig.CONFIG_KEY}", str(exc)) from None


def _state(config, cpath):
    """The ``priority`` and status (``enabled``, ``active``) of a key provider's config."""
    status = RealmKey.ACTIVE
    if not as_bool(config.get("enabled", "true"), f"{cpath}.enabled"):
        status = RealmKey.DISABLED
    elif not as_bool(config.get("active", "true"), f"{cpath}.active"):
        status = RealmKey.PASSIVE
    return {"priority": as_int(config.get("priority", "0"), f"{cpath}.priority"), "status": status}


def _secret_key(comp, path, provider_id, p):
    """An hmac-generated or aes-generated component: its secret kept under its kid, or generated
    when it has none, as Keycloak does; an algorithm not served is reported, not imported."""
    v = p.take(comp, path, {"id": as_str, "name": as_str, "providerId": as_str, "config": as_multi_map},
               derived={"subType", "subComponents", "parentId"})
    config = {k: (x[0] if x else "") for k, x in v.get("config", {}).items()}
    cpath = f"{path}.config"
    allowed = SECRET_PROVIDERS[provider_id]
    algorithm = config.get("algorithm") or allowed[0]
    if algorithm not in allowed:
        p.unsupported(path, f"{provider_id} key {algorithm!r} not supported ({', '.join(allowed)}), not imported")
        return None
    secret = None
    if config.get("secret"):
        try:
            secret = base64.urlsafe_b64decode(config["secret"] + "=" * (-len(config["secret"]) % 4))
        except ValueError:
            raise RepresentationError(f"{cpath}.secret", "expected a base64url secret") from None
        if len(secret) < 16:
            raise RepresentationError(f"{cpath}.secret", "a secret of at least 16 bytes is required")
    size = (as_int(config["secretSize"], f"{cpath}.secretSize") if config.get("secretSize")
            else keys.AES_SECRET_SIZE if algorithm == RealmKey.AES else keys.HMAC_SECRET_SIZE)
    return {"_path": path, "id": v.get("id"), "name": v.get("name") or provider_id, "algorithm": algorithm,
            "provider_id": provider_id, "secret": secret, "kid": config.get("kid") or None, "secret_size": size,
            **_state(config, cpath)}


def _keycloak_kid(public_key, salt=""):
    """Keycloak's key id: base64url(SHA-256(SubjectPublicKeyInfo)), so tokens it signed keep
    their kid after a migration."""
    digest = hashlib.sha256(salt.encode() + public_key.public_bytes(*_SPKI)).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _b64(raw):
    return base64.b64encode(raw).decode()


def self_signed(private_key, realm_name):
    """Keycloak's rsa provider needs a certificate; generated keys get a self-signed one."""
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, realm_name)])
    now = datetime.now(UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(private_key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - timedelta(days=1))
            .not_valid_after(now + timedelta(days=3650)).sign(private_key, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.DER)


def policy_reps(realm):
    """``{REGISTRATION_POLICY: [...]}``: the realm's client registration policies as Keycloak exports them."""
    # by name then subType: the order survives an import under new ids
    rows = Component.objects.filter(realm=realm, provider_type=REGISTRATION_POLICY).order_by("name", "sub_type", "pk")
    return {REGISTRATION_POLICY: [{"id": c.id, "name": c.name, "providerId": c.provider_id, "subType": c.sub_type,
                                   "subComponents": {}, "config": c.config} for c in rows]}


def key_component(key, realm_name):
    config = {
        "priority": [str(key.priority)],
        "enabled": ["true" if key.status != RealmKey.DISABLED else "false"],
        "active": ["true" if key.status == RealmKey.ACTIVE else "false"],
    }
    if key.algorithm in keys.SECRET_ALGORITHMS:  # as Keycloak exports it: the secret (base64url) and its kid
        secret = key.secret
        config.update(kid=[key.kid], secret=[base64.urlsafe_b64encode(secret).rstrip(b"=").decode()],
                      secretSize=[str(len(secret))])
        if key.algorithm != RealmKey.AES:
            config["algorithm"] = [key.algorithm]
        return {"id": key.id, "name": key.provider_name, "providerId": keys.GENERATED[key.algorithm],
                "subComponents": {}, "config": config}
    private = serialization.load_pem_private_key(key.private_key_pem.encode(), password=None)
    pkcs8 = private.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption())
    if key.algorithm in RSA_ALGORITHMS or key.algorithm in RealmKey.ENCRYPTION_ALGORITHMS:
        encryption = key.algorithm in RealmKey.ENCRYPTION_ALGORITHMS
        provider = "rsa-enc-generated" if encryption else "rsa"
        cert = (x509.load_pem_x509_certificate(key.certificate_pem.encode()).public_bytes(serialization.Encoding.DER)
                if key.certificate_pem else self_signed(private, realm_name))
        config.update(privateKey=[_b64(pkcs8)], certificate=[_b64(cert)], algorithm=[key.algorithm],
                      keyUse=["ENC" if encryption else "SIG"])
    else:
        ecdsa = key.algorithm != "EdDSA"
        provider = "ecdsa-generated" if ecdsa else "eddsa-generated"
        prefix = "ecdsa" if ecdsa else "eddsa"
        curve_key, curve = (("ecdsaEllipticCurveKey", next(c for c, a in EC_CURVES.items() if a == key.algorithm))
                            if ecdsa else _CURVES["EdDSA"])
        config.update({f"{prefix}PrivateKey": [_b64(pkcs8)],
                       f"{prefix}PublicKey": [_b64(private.public_key().public_bytes(*_SPKI))],
                       curve_key: [curve]})
    return {"id": key.id, "name": key.provider_name, "providerId": provider, "subComponents": {}, "config": config}


class KeyApplier:
    """The importer's step for keys (a part of importer._Applier)."""

    def add_policies(self, policies):
        """As Keycloak's import: the policies of the representation, else Keycloak's defaults."""
        rows = [(p["name"], p["provider_id"], p["sub_type"], p["config"], p["id"]) for p in policies]
        rows = rows or [(*d, None) for d in DEFAULT_POLICIES]
        Component.objects.bulk_create(
            Component(realm=self.realm, id=pk, name=name, provider_id=provider_id, provider_type=REGISTRATION_POLICY,
                      parent_id=self.realm.pk, sub_type=sub, config=config)
            for (name, provider_id, sub, config, _), pk in zip(rows, self.ids_for(Component, [r[4] for r in rows])))

    def add_keys(self):
        stored = 0
        self.add_policies([k for k in self.r["keys"] if k.get("policy")])
        for k in self.r["keys"]:
            if k.get("policy"):
                continue
            if "secret" in k:
                self._add_secret(k)  # a secret signs no token others verify: the realm still needs a key pair
                continue
            signing = keys.use_of(k["algorithm"]) == RealmKey.SIG
            if k["private"] is None:  # a "generated" provider without material: generate, like Keycloak
                keys.generate_key(self.realm, k["algorithm"], priority=k["priority"], status=k["status"],
                                  provider_name=k["name"])
                stored += signing
                continue
            if k["certificate"] is not None and (
                k["certificate"].public_key().public_bytes(*_SPKI) != k["private"].public_key().public_bytes(*_SPKI)
            ):
                raise RepresentationError(f"{k['_path']}", "the certificate does not match the private key")
            pem = k["private"].private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                             serialization.NoEncryption())
            kid = _keycloak_kid(k["private"].public_key())
            if RealmKey.objects.filter(kid=kid).exists():
                new_kid = _keycloak_kid(k["private"].public_key(), salt=self.realm.pk)
                self.p.unsupported(k["_path"], f"key id {kid} is taken by another realm; stored as {new_kid}")
                kid = new_kid
            row = keys.store_key(
                self.realm, jwk.JWK.from_pem(pem), k["algorithm"], priority=k["priority"], status=k["status"],
                provider_name=k["name"], provider_id=k["provider_id"], kid=kid,
                certificate_pem=(k["certificate"].public_bytes(serialization.Encoding.PEM).decode()
                                 if k["certificate"] is not None else ""),
            )
            if k["id"]:
                new_pk = self.id_for(RealmKey, k["id"])
                RealmKey.objects.filter(pk=row.pk).update(id=new_pk)
            stored += signing
        if not stored:
            keys.generate_key(self.realm, "RS256")

    def _add_secret(self, k):
        if k["secret"] is None:
            row = keys.generate_key(self.realm, k["algorithm"], priority=k["priority"], status=k["status"],
                                    provider_name=k["name"], secret_size=k["secret_size"])
        else:
            kid = k["kid"]
            if kid is not None and RealmKey.objects.filter(kid=kid).exists():
                self.p.unsupported(k["_path"], f"key id {kid} is taken by another realm; stored under a new one")
                kid = None
            row = RealmKey(realm=self.realm, algorithm=k["algorithm"], priority=k["priority"], status=k["status"],
                           use=keys.use_of(k["algorithm"]), provider_name=k["name"],
                           provider_id=keys.GENERATED[k["algorithm"]])
            keys.set_secret(row, k["secret"], kid)
            row.save()
        if k["id"]:
            RealmKey.objects.filter(pk=row.pk).update(id=self.id_for(RealmKey, k["id"]))
