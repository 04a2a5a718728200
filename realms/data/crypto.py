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


def _decrypt(cipher, token):
    return cipher.decrypt(token.encode()).decode()


# What is opened again and again: a client's secret (client_secret_jwt, HS-signed request
# objects), SAML's signing key read from its row at each request, one-time-code secrets, the
# sealed secrets of LDAP, SMTP and identity providers. Not the keys the realm keys cache
# (realms.data.keys) opens once for each realm it keeps: kept here too, they were every served
# realm's RSA key, never asked again (decision 0107).
_decrypt_cached = functools.lru_cache(maxsize=4096)(_decrypt)


def decrypt(token: str, *, cached=True) -> str:
    """``token`` opened; kept in a process-wide cache of 4,096 unless ``cached`` is False."""
    return (_decrypt_cached if cached else _decrypt)(_current_cipher(), token)


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
