"""Who the benchmark signs in as: shared by the set-up (``setup_realm.py``, which stores them)
and the load generator (``codeflow.py``, which signs in as them), without Django."""
import uuid

REALM, PASSKEY_REALM, CLIENT = "bench", "bench-passkeys", "bench-app"
# The refresh grant again with ES256 tokens (the realm's Default Signature Algorithm): its floor.
ES256_REALM = "bench-es256"
SECRET = "bench-secret-0123456789abcdefghijklmnop"
USER, PASSWORD = "bench-user", "bench-password-1"
REDIRECT = "http://127.0.0.1/cb"
# A TOTP code is good once, so flows with a second factor are spread over many users; each
# passkey user signs in from one load-generator thread at a time (its counter only goes up).
TOTP_USERS, PASSKEY_USERS = 1500, 100


def totp_user(n):
    return f"bench-totp-{n:04d}"


def totp_secret(n):
    return f"bench-totp-{n:04d}-secret"[:20]


def passkey_user(n):
    return f"bench-passkey-{n:04d}"


def passkey_user_id(n):
    """A passkey's user handle is its user's id, so the set-up chooses the ids."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"bench-passkey-{n}"))


def passkey_seed(n):
    return f"bench-passkey-{n}"
