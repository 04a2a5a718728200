"""Small cryptographic helpers shared by every app: secrets at rest, random values, comparison.

Secrets at rest (client secrets, private keys) are encrypted with a key derived from
SECRET_KEY; SECRET_KEY_FALLBACKS keep older values readable after the key is changed.
"""
import base64
import functools
import hmac
import secrets

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF


@functools.cache
def _fernet_for(secret_key):
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"idp secrets at rest").derive(
        secret_key.encode()
    )
    return Fernet(base64.urlsafe_b64encode(key))


@functools.cache
def _cipher(secret_key, fallbacks):
    return MultiFernet([_fernet_for(k) for k in (secret_key, *fallbacks)])


def _current_cipher():
    from django.conf import settings

    return _cipher(settings.SECRET_KEY, tuple(getattr(settings, "SECRET_KEY_FALLBACKS", ())))


def encrypt(plaintext: str) -> str:
    return _current_cipher().encrypt(plaintext.encode()).decode()


@functools.lru_cache(maxsize=4096)
def _decrypt_cached(cipher, token):
    return cipher.decrypt(token.encode()).decode()


def decrypt(token: str) -> str:
    return _decrypt_cached(_current_cipher(), token)


def reseal(token: str) -> str | None:
    """``token`` sealed again under the current SECRET_KEY, or None when it already is
    (``manage.py rotate_secret_key``). A token no key opens raises ``cryptography.fernet.InvalidToken``."""
    from django.conf import settings

    cipher = _current_cipher()
    try:
        _fernet_for(settings.SECRET_KEY).decrypt(token.encode())
        return None
    except InvalidToken:
        return cipher.rotate(token.encode()).decode()


def random_secret(nbytes=32) -> str:
    """A high-entropy client secret (256 bits, URL-safe)."""
    return secrets.token_urlsafe(nbytes)


def random_id() -> str:
    return secrets.token_urlsafe(24)


def constant_time_equals(a, b) -> bool:
    if isinstance(a, str):
        a = a.encode()
    if isinstance(b, str):
        b = b.encode()
    return hmac.compare_digest(a, b)
