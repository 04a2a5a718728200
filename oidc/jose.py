"""Compact JWS signing and verification on the hot paths.

Keys are jwcrypto JWKs (parsed once, cached by realms.data.keys and the resource-server JWKS cache);
the signature itself is computed by ``cryptography`` on the key object jwcrypto hands out
(``get_op_key``). jwcrypto's JWS object costs about 60 µs of Python around a 16 µs RSA verify,
which alone would cap local validation below the 20,000/s the resource-server helper must reach,
so the compact serialization is done here: split, base64url, one JSON parse, one signature check.
Everything else (JWK parsing, client assertions, JWKS documents, JWE) stays with jwcrypto.
"""
import base64
import hashlib
import hmac
import json

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature
from jwcrypto import jwe
from jwcrypto.common import JWException

from .errors import OidcError

# The only algorithms ever accepted; "none" and anything unknown are refused by construction.
ASYMMETRIC = {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
SYMMETRIC = {"HS256", "HS384", "HS512"}
_HASH = {"256": hashes.SHA256, "384": hashes.SHA384, "512": hashes.SHA512}
_HMAC = {"HS256": hashlib.sha256, "HS384": hashlib.sha384, "HS512": hashlib.sha512}
_KTY = {"RS": "RSA", "PS": "RSA", "ES": "EC", "Ed": "OKP"}
_EC_SIZE = {"ES256": 32, "ES384": 48, "ES512": 66}
# JWE: the key management algorithms ID tokens and userinfo are encrypted with to a client's key
# (RSA1_5 never: PKCS#1 v1.5 encryption invites padding oracles), those a JWE sent here may use
# (the realm's rsa-enc-generated keys), and the content encryptions (Keycloak's, RFC 7518 §5).
JWE_KEY_TYPES = {"RSA-OAEP": "RSA", "RSA-OAEP-256": "RSA", "ECDH-ES": "EC", "ECDH-ES+A128KW": "EC",
                 "ECDH-ES+A192KW": "EC", "ECDH-ES+A256KW": "EC"}
JWE_ALGS = tuple(JWE_KEY_TYPES)
JWE_DECRYPT_ALGS = ("RSA-OAEP", "RSA-OAEP-256")
JWE_ENCS = ("A128CBC-HS256", "A192CBC-HS384", "A256CBC-HS512", "A128GCM", "A192GCM", "A256GCM")
DEFAULT_ENC = "A128CBC-HS256"  # OIDC Dynamic Client Registration §2: the enc when only an alg is named


class JoseError(OidcError):
    """The token is malformed or its signature does not verify."""


def b64e(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64d(text: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, TypeError) as exc:
        raise JoseError("bad base64url") from exc


def _dumps(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def header_b64(alg, kid, typ="JWT"):
    """The encoded protected header; callers may cache it per key."""
    header = {"alg": alg, "typ": typ}
    if kid:
        header["kid"] = kid
    return b64e(_dumps(header))


def _sign_bytes(alg, key, data: bytes) -> bytes:
    if alg in SYMMETRIC:
        return hmac.new(key, data, _HMAC[alg]).digest()
    op = key.get_op_key("sign")
    prefix = alg[:2]
    if prefix == "RS":
        return op.sign(data, padding.PKCS1v15(), _HASH[alg[2:]]())
    if prefix == "PS":
        digest = _HASH[alg[2:]]()
        return op.sign(data, padding.PSS(mgf=padding.MGF1(digest), salt_length=digest.digest_size), digest)
    if prefix == "ES":
        r, s = decode_dss_signature(op.sign(data, ec.ECDSA(_HASH[alg[2:]]())))
        size = _EC_SIZE[alg]
        return r.to_bytes(size, "big") + s.to_bytes(size, "big")
    if alg == "EdDSA":
        return op.sign(data)
    raise JoseError(f"unsupported algorithm {alg}")


def sign(claims: dict, *, alg: str, key, kid: str = "", typ: str = "JWT", header: str = "") -> str:
    """Compact JWS of ``claims``. ``key`` is a jwcrypto JWK, or bytes for HS*."""
    head = header or header_b64(alg, kid, typ)
    signing_input = f"{head}.{b64e(_dumps(claims))}"
    return f"{signing_input}.{b64e(_sign_bytes(alg, key, signing_input.encode('ascii')))}"


def parse(token: str):
    """(header dict, payload dict, signing input bytes, signature bytes); no verification."""
    if not isinstance(token, str) or token.count(".") != 2:
        raise JoseError("not a compact JWS")
    head, body, sig = token.split(".")
    try:
        header = json.loads(b64d(head))
        payload = json.loads(b64d(body))
    except ValueError as exc:
        raise JoseError("bad JSON") from exc
    if not isinstance(header, dict) or not isinstance(payload, dict):
        raise JoseError("bad JOSE header or payload")
    return header, payload, f"{head}.{body}".encode("ascii"), b64d(sig)


def verify_signature(alg, key, signing_input: bytes, signature: bytes):
    """Raise JoseError unless ``signature`` is valid for ``alg`` under ``key``.

    ``key`` is bytes for HS* and a jwcrypto JWK otherwise; the key type must match the
    algorithm's family, so a public RSA key can never be used as an HMAC secret and vice versa."""
    if alg in SYMMETRIC:
        if not isinstance(key, bytes):
            raise JoseError("HMAC algorithm with a non-symmetric key")
        if not hmac.compare_digest(hmac.new(key, signing_input, _HMAC[alg]).digest(), signature):
            raise JoseError("bad signature")
        return
    if alg not in ASYMMETRIC or isinstance(key, bytes):
        raise JoseError(f"algorithm {alg!r} not allowed")
    if key.get("kty") != _KTY[alg[:2]]:
        raise JoseError("key type does not match the algorithm")
    op = key.get_op_key("verify")
    prefix = alg[:2]
    try:
        if prefix == "RS":
            op.verify(signature, signing_input, padding.PKCS1v15(), _HASH[alg[2:]]())
        elif prefix == "PS":
            digest = _HASH[alg[2:]]()
            op.verify(signature, signing_input, padding.PSS(mgf=padding.MGF1(digest), salt_length=digest.digest_size), digest)
        elif prefix == "ES":
            size = _EC_SIZE[alg]
            if len(signature) != 2 * size:
                raise JoseError("bad signature")
            der = encode_dss_signature(int.from_bytes(signature[:size], "big"), int.from_bytes(signature[size:], "big"))
            op.verify(der, signing_input, ec.ECDSA(_HASH[alg[2:]]()))
        else:
            op.verify(signature, signing_input)
    except InvalidSignature as exc:
        raise JoseError("bad signature") from exc


def encrypt(plaintext: str, *, alg: str, enc: str, key, cty: str = "") -> str:
    """Compact JWE of ``plaintext`` to the public jwk ``key`` (its kid in the header); ``cty``
    ``JWT`` for a nested JWT, as Keycloak sends a signed-then-encrypted token."""
    if alg not in JWE_ALGS or enc not in JWE_ENCS:
        raise JoseError(f"unsupported JWE algorithm {alg}/{enc}")
    header = {"alg": alg, "enc": enc}
    if key.get("kid"):
        header["kid"] = key.get("kid")
    if cty:
        header["cty"] = cty
    token = jwe.JWE(plaintext.encode(), protected=header, algs=[alg, enc])
    token.add_recipient(key)
    return token.serialize(compact=True)


def jwe_header(token: str) -> dict:
    """The protected header of a compact JWE (five parts), not yet decrypted."""
    if not isinstance(token, str) or token.count(".") != 4:
        raise JoseError("not a compact JWE")
    try:
        header = json.loads(b64d(token.split(".", 1)[0]))
    except ValueError as exc:
        raise JoseError("bad JSON") from exc
    if not isinstance(header, dict):
        raise JoseError("bad JWE header")
    return header


def decrypt(token: str, key) -> str:
    """The plaintext of a compact JWE the private jwk ``key`` decrypts, under the allowlist only."""
    header = jwe_header(token)
    if header.get("alg") not in JWE_DECRYPT_ALGS or header.get("enc") not in JWE_ENCS:
        raise JoseError("JWE algorithm not allowed")
    try:
        parsed = jwe.JWE(algs=[header["alg"], header["enc"]])
        parsed.deserialize(token, key)
        return parsed.payload.decode()
    except (JWException, ValueError, UnicodeDecodeError) as exc:
        raise JoseError("cannot decrypt") from exc


def half_hash(value: str, alg: str) -> str:
    """OIDC at_hash / c_hash: left half of the hash of the ASCII value, base64url."""
    if alg == "EdDSA":
        digest = hashlib.sha512(value.encode("ascii")).digest()
    else:
        digest = {"256": hashlib.sha256, "384": hashlib.sha384, "512": hashlib.sha512}[alg[-3:]](
            value.encode("ascii")).digest()
    return b64e(digest[: len(digest) // 2])
