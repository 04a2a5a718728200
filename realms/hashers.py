"""Password hashers: Argon2id (Keycloak's default algorithm) and Keycloak's PBKDF2 encodings for
new hashes, as the realm's hashAlgorithm policy names them, plus verifiers for the hashes a
Keycloak realm export carries. ``realms.password_policy`` picks the hasher and re-hashes a
verified password the policy would not make now, so an imported Keycloak hash is upgraded at the
user's next sign-in."""
import base64
import functools
import hashlib
import os
import secrets
import threading

from argon2 import Type
from argon2.low_level import hash_secret_raw
from django.contrib.auth.hashers import Argon2PasswordHasher, BasePasswordHasher, check_password, make_password
from django.utils.crypto import constant_time_compare


# Argon2id hashes computed at once in this process: no more than the cores it may run on. Each
# walks 7 MiB; more at once on the same core only evict each other's blocks from the caches.
# Threads waiting here use no CPU.
_HASHING = threading.BoundedSemaphore(len(os.sched_getaffinity(0)))


class Argon2idHasher(Argon2PasswordHasher):
    """Argon2id with Keycloak's default parameters (m=7 MiB, t=5, p=1), one of the equivalent
    minimum configurations OWASP lists (with m=19 MiB/t=2 and m=12 MiB/t=3). Of those it is the
    cheapest here in CPU per check, which leaves room for tens of sign-ins per core-second.
    Django's hasher, through argon2-cffi: ``scripts/setup.sh`` builds its C library for AVX2
    where the CPU has it (decision 0046)."""

    time_cost = 5
    memory_cost = 7168
    parallelism = 1

    def encode(self, password, salt):
        with _HASHING:
            return super().encode(password, salt)

    def must_update(self, encoded):
        # Other parameters than the policy's. (Django also counts the salt's entropy in
        # alphanumeric characters, which would call the 16 random bytes of earlier hashes short of
        # 128 bits.)
        current = self.decode(encoded)["params"]
        wanted = self.params()
        wanted.salt_len = current.salt_len
        return current != wanted

    def verify(self, password, encoded):
        with _HASHING:
            return super().verify(password, encoded)


def _b64d(value):
    return base64.b64decode(value)


def _b64e(raw):
    return base64.b64encode(raw).decode()


class _KeycloakPbkdf2Hasher(BasePasswordHasher):
    digest_name = None

    def verify(self, password, encoded):
        _, iterations, salt, expected = encoded.split("$", 3)
        expected_raw = _b64d(expected)
        derived = hashlib.pbkdf2_hmac(
            self.digest_name, password.encode(), _b64d(salt), int(iterations), dklen=len(expected_raw)
        )
        return constant_time_compare(derived, expected_raw)

    def encode(self, password, salt, iterations=27500):
        raw = hashlib.pbkdf2_hmac(self.digest_name, password.encode(), salt.encode(), iterations, dklen=64)
        return f"{self.algorithm}${iterations}${_b64e(salt.encode())}${_b64e(raw)}"

    def decode(self, encoded):
        algorithm, iterations, salt, hash_ = encoded.split("$", 3)
        return {"algorithm": algorithm, "iterations": int(iterations), "salt": salt, "hash": hash_}

    def safe_summary(self, encoded):
        d = self.decode(encoded)
        return {"algorithm": d["algorithm"], "iterations": d["iterations"], "salt": "…", "hash": "…"}

    def must_update(self, encoded):
        return True

    def harden_runtime(self, password, encoded):
        pass


class KeycloakPbkdf2Sha256Hasher(_KeycloakPbkdf2Hasher):
    algorithm = "keycloak_pbkdf2_sha256"
    digest_name = "sha256"


class KeycloakPbkdf2Sha512Hasher(_KeycloakPbkdf2Hasher):
    algorithm = "keycloak_pbkdf2_sha512"
    digest_name = "sha512"


class KeycloakPbkdf2Sha1Hasher(_KeycloakPbkdf2Hasher):
    algorithm = "keycloak_pbkdf2"
    digest_name = "sha1"


class KeycloakArgon2Hasher(BasePasswordHasher):
    """Keycloak's argon2 provider stores raw hash and salt plus parameters separately."""

    algorithm = "keycloak_argon2"
    _types = {"id": Type.ID, "i": Type.I, "d": Type.D}

    def verify(self, password, encoded):
        _, type_, version, memory, iterations, parallelism, salt, expected = encoded.split("$")
        expected_raw = _b64d(expected)
        derived = hash_secret_raw(
            password.encode(),
            _b64d(salt),
            time_cost=int(iterations),
            memory_cost=int(memory),
            parallelism=int(parallelism),
            hash_len=len(expected_raw),
            type=self._types[type_],
            version=0x13 if version == "1.3" else 0x10,
        )
        return constant_time_compare(derived, expected_raw)

    def encode(self, password, salt):
        raise ValueError("keycloak_argon2 only verifies imported hashes")

    def decode(self, encoded):
        parts = encoded.split("$")
        return {"algorithm": parts[0], "salt": parts[6], "hash": parts[7]}

    def safe_summary(self, encoded):
        return {"algorithm": self.algorithm, "salt": "…", "hash": "…"}

    def must_update(self, encoded):
        return True

    def harden_runtime(self, password, encoded):
        pass


# Keycloak's PBKDF2 algorithm names -> our hashers (import reads them, export writes them back).
PBKDF2 = {
    "pbkdf2-sha256": KeycloakPbkdf2Sha256Hasher.algorithm,
    "pbkdf2-sha512": KeycloakPbkdf2Sha512Hasher.algorithm,
    "pbkdf2": KeycloakPbkdf2Sha1Hasher.algorithm,
}


def encoded_from_keycloak(algorithm, hash_b64, salt_b64, iterations, params=None):
    """Turn Keycloak's stored password hash into a Django-encoded string our hashers verify.

    Raises ValueError for an algorithm we cannot verify (the import then names the user)."""
    if algorithm in PBKDF2:
        return f"{PBKDF2[algorithm]}${int(iterations)}${salt_b64}${hash_b64}"
    if algorithm == "argon2":
        p = {k: (v[0] if isinstance(v, list) else v) for k, v in (params or {}).items()}
        return "$".join(
            [
                KeycloakArgon2Hasher.algorithm,
                p.get("type", "id"),
                p.get("version", "1.3"),
                str(p.get("memory", 7168)),
                str(int(iterations)),
                str(p.get("parallelism", 1)),
                salt_b64,
                hash_b64,
            ]
        )
    raise ValueError(f"unsupported password hash algorithm {algorithm!r}")


@functools.cache
def _decoy_hash():
    return make_password(secrets.token_urlsafe(32))


def spend_check_time(password):
    """Do the work of one password check against a hash no user has, so that an unknown user, or
    one without a password, is answered as slowly as a wrong password (names stay hidden)."""
    check_password(password or "", _decoy_hash())

