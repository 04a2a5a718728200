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

import nacl.bindings as sodium
import nacl.exceptions as nacl_exceptions
import nacl.pwhash.argon2id as sodium_argon2id
from argon2 import Type
from argon2.low_level import hash_secret_raw
from django.contrib.auth.hashers import Argon2PasswordHasher, BasePasswordHasher, check_password, make_password
from django.utils.crypto import constant_time_compare


# Argon2id hashes computed at once in this process: no more than the cores it may run on. Each
# walks 7 MiB; more at once on the same core only evict each other's blocks from the caches and
# queue on the process's memory map (four threads on one core: 10.6 ms of CPU per hash, against
# 9.2 ms taking turns; docs/benchmarks.md). Threads waiting here use no CPU.
_HASHING = threading.BoundedSemaphore(len(os.sched_getaffinity(0)))


class Argon2idHasher(Argon2PasswordHasher):
    """Argon2id with Keycloak's default parameters (m=7 MiB, t=5, p=1), one of the equivalent
    minimum configurations OWASP lists (with m=19 MiB/t=2 and m=12 MiB/t=3). Of those it is the
    cheapest here in CPU per check (about 13 ms against 16 ms for m=19 MiB/t=2), which leaves
    room for tens of sign-ins per core-second."""

    time_cost = 5
    memory_cost = 7168
    parallelism = 1

    def encode(self, password, salt):
        # libsodium's Argon2id makes the same hash, bit for bit (argon2-cffi verifies it), for
        # about 60% of argon2-cffi's CPU here; it takes 16-byte salts, so Django's 22-character
        # salt (131 bits) is hashed to a 128-bit one, which the encoding stores.
        raw_salt = hashlib.blake2b(salt.encode(), digest_size=sodium.crypto_pwhash_SALTBYTES).digest()
        with _HASHING:
            digest = sodium.crypto_pwhash_alg(32, password.encode(), raw_salt, self.time_cost,
                                              self.memory_cost * 1024, sodium.crypto_pwhash_ALG_ARGON2ID13)
        b64 = lambda raw: base64.b64encode(raw).decode().rstrip("=")  # noqa: E731 (PHC: unpadded)
        return (f"{self.algorithm}$argon2id$v=19$m={self.memory_cost},t={self.time_cost},p=1"
                f"${b64(raw_salt)}${b64(digest)}")

    def must_update(self, encoded):
        # Other parameters than the policy's. (Django also counts the salt's entropy in
        # alphanumeric characters, which would call our 16 random bytes short of 128 bits.)
        current = self.decode(encoded)["params"]
        wanted = self.params()
        wanted.salt_len = current.salt_len
        return current != wanted

    def verify(self, password, encoded):
        # The same standard (PHC) hash, checked by libsodium's optimised Argon2id: about a third of
        # argon2-cffi's CPU time here (docs/benchmarks.md).
        phc = encoded[len(self.algorithm):]
        if not phc.startswith("$argon2id$"):
            return super().verify(password, encoded)
        try:
            with _HASHING:
                return sodium_argon2id.verify(phc.encode(), password.encode())
        except nacl_exceptions.InvalidkeyError:
            return False


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

