"""Standard Webhooks signatures, both directions.

``v1``: HMAC-SHA256 over ``<webhook-id>.<webhook-timestamp>.<raw body>`` keyed with the bytes of a
``whsec_`` secret (base64 of 24 to 64 random bytes). ``v1a``: Ed25519 over the same bytes, the
provider holding a ``whsk_`` signing key and the receiver its ``whpk_`` public key (both base64
of the raw 32-byte key). The header carries one space-separated entry per active secret.
"""
import base64
import binascii
import hmac
import secrets
import time

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from .errors import WebhooksError

SECRET_PREFIX = "whsec_"
SIGNING_KEY_PREFIX = "whsk_"
PUBLIC_KEY_PREFIX = "whpk_"
MIN_SECRET_BYTES, MAX_SECRET_BYTES = 24, 64
DEFAULT_TOLERANCE = 300
# A header with more entries than this is refused instead of costing one comparison per entry.
MAX_SIGNATURE_ENTRIES = 20


class InvalidSecret(WebhooksError, ValueError):
    """A secret or key is not in the expected prefixed base64 form."""


class VerificationError(WebhooksError):
    """The request is not a valid signed webhook; the message says why (for logs, not callers)."""


def _now():
    return time.time()


def _b64decode(value):
    return base64.b64decode(value, validate=True)


def generate_secret(nbytes=32):
    if not MIN_SECRET_BYTES <= nbytes <= MAX_SECRET_BYTES:
        raise InvalidSecret(f"a secret has {MIN_SECRET_BYTES} to {MAX_SECRET_BYTES} bytes")
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(nbytes)).decode()


def decode_secret(secret):
    """``whsec_...`` -> key bytes; refuses other prefixes and sizes outside 24-64 bytes."""
    if not isinstance(secret, str) or not secret.startswith(SECRET_PREFIX):
        raise InvalidSecret("a signing secret starts with whsec_")
    try:
        key = _b64decode(secret[len(SECRET_PREFIX):])
    except (binascii.Error, ValueError):
        raise InvalidSecret("a signing secret is whsec_ followed by base64") from None
    if not MIN_SECRET_BYTES <= len(key) <= MAX_SECRET_BYTES:
        raise InvalidSecret(f"a signing secret has {MIN_SECRET_BYTES} to {MAX_SECRET_BYTES} bytes")
    return key


def generate_key_pair():
    """A new Ed25519 pair for ``v1a``: (``whsk_...`` signing key, ``whpk_...`` public key)."""
    private = Ed25519PrivateKey.generate()
    raw = private.private_bytes_raw()
    return SIGNING_KEY_PREFIX + base64.b64encode(raw).decode(), _public_text(private)


def _public_text(private):
    raw = private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    return PUBLIC_KEY_PREFIX + base64.b64encode(raw).decode()


def _load_signing_key(text):
    try:
        raw = _b64decode(text[len(SIGNING_KEY_PREFIX):])
    except (binascii.Error, ValueError):
        raise InvalidSecret("a signing key is whsk_ followed by base64") from None
    # Some libraries store seed + public key (64 bytes); the seed alone defines the key.
    if len(raw) not in (32, 64):
        raise InvalidSecret("an Ed25519 signing key has 32 bytes")
    return Ed25519PrivateKey.from_private_bytes(raw[:32])


def _load_public_key(text):
    try:
        raw = _b64decode(text[len(PUBLIC_KEY_PREFIX):])
        return Ed25519PublicKey.from_public_bytes(raw)
    except (binascii.Error, ValueError):
        raise InvalidSecret("a public key is whpk_ followed by base64 of 32 bytes") from None


def public_key_of(signing_key):
    return _public_text(_load_signing_key(signing_key))


def signed_content(msg_id, timestamp, body):
    return f"{msg_id}.{timestamp}.".encode() + body


class Signer:
    """Signs with every active secret (``whsec_`` and/or ``whsk_``) of an endpoint."""

    def __init__(self, secrets_):
        self._hmac_keys = []
        self._ed_keys = []
        for s in secrets_:
            if s.startswith(SIGNING_KEY_PREFIX):
                self._ed_keys.append(_load_signing_key(s))
            else:
                self._hmac_keys.append(decode_secret(s))
        if not (self._hmac_keys or self._ed_keys):
            raise InvalidSecret("an endpoint needs at least one active secret")

    def sign(self, msg_id, timestamp, body):
        """The ``webhook-signature`` header value for one attempt."""
        content = signed_content(msg_id, timestamp, body)
        entries = ["v1," + base64.b64encode(hmac.digest(k, content, "sha256")).decode() for k in self._hmac_keys]
        entries += ["v1a," + base64.b64encode(k.sign(content)).decode() for k in self._ed_keys]
        return " ".join(entries)

    def headers(self, msg_id, body, timestamp=None):
        ts = int(_now()) if timestamp is None else int(timestamp)
        return {"webhook-id": msg_id, "webhook-timestamp": str(ts), "webhook-signature": self.sign(msg_id, ts, body)}


class Verifier:
    """Checks a received request against every accepted secret (several during a rotation).

    ``whsec_`` secrets verify ``v1`` entries, ``whpk_`` public keys verify ``v1a`` entries; any
    other version is ignored, so a header with only unknown versions fails."""

    def __init__(self, secrets_, tolerance=DEFAULT_TOLERANCE):
        self.tolerance = tolerance
        self._hmac_keys = []
        self._public_keys = []
        for s in secrets_:
            if s.startswith(PUBLIC_KEY_PREFIX):
                self._public_keys.append(_load_public_key(s))
            else:
                self._hmac_keys.append(decode_secret(s))
        if not (self._hmac_keys or self._public_keys):
            raise InvalidSecret("a receiver needs at least one secret")

    def verify(self, msg_id, timestamp, signature, body, now=None):
        """Raise VerificationError unless the signature header matches within the tolerance."""
        if not (msg_id and timestamp and signature):
            raise VerificationError("missing webhook-id, webhook-timestamp or webhook-signature")
        if not timestamp.isdigit() or len(timestamp) > 12:
            raise VerificationError("webhook-timestamp is not integer seconds")
        now = _now() if now is None else now
        if abs(now - int(timestamp)) > self.tolerance:
            raise VerificationError("webhook-timestamp outside the tolerance")
        entries = signature.split(" ")
        if len(entries) > MAX_SIGNATURE_ENTRIES:
            raise VerificationError("too many signature entries")
        content = signed_content(msg_id, timestamp, body)
        expected = None
        for entry in entries:
            version, sep, value = entry.partition(",")
            if not sep:
                continue
            try:
                presented = _b64decode(value)
            except (binascii.Error, ValueError):
                continue
            if version == "v1" and self._hmac_keys:
                if expected is None:
                    expected = [hmac.digest(k, content, "sha256") for k in self._hmac_keys]
                # Compare against every key without stopping early: timing says nothing about which.
                if sum(hmac.compare_digest(presented, e) for e in expected):
                    return
            elif version == "v1a" and len(presented) == 64:
                for key in self._public_keys:
                    try:
                        key.verify(presented, content)
                        return
                    except InvalidSignature:
                        pass
        raise VerificationError("no matching signature")

    def verify_request_headers(self, headers, body, now=None):
        """``headers``: any mapping with case-insensitive access (Django's request.headers)."""
        return self.verify(headers.get("webhook-id"), headers.get("webhook-timestamp"),
                           headers.get("webhook-signature"), body, now=now)
