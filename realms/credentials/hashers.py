"""Password hashers: Argon2id (Keycloak's default algorithm) and Keycloak's PBKDF2 encodings for
new hashes, as the realm's hashAlgorithm policy names them, plus verifiers for the hashes a
Keycloak realm export carries. ``realms.credentials.password_policy`` picks the hasher and re-hashes a
verified password the policy would not make now, so an imported Keycloak hash is upgraded at the
user's next sign-in."""
import base64
import functools
import hashlib
import mmap
import os
import queue
import secrets
from contextlib import contextmanager

from argon2 import Type
from argon2.low_level import ARGON2_VERSION, HashingError, core, error_to_str, ffi, lib
from django.contrib.auth.hashers import Argon2PasswordHasher, BasePasswordHasher, check_password, make_password
from django.utils.crypto import constant_time_compare

_HUGE_PAGE = 2 << 20


class _Arena:
    """One Argon2 hash's working memory, kept for the next hash (decision 0054). It is mapped
    on 2 MiB pages where the kernel grants them (transparent huge pages, asked for with
    ``MADV_HUGEPAGE``): the hash reads its 7 MiB at random, and on 4 KiB pages the misses in the
    address translation cache cost about 5 % of it. libargon2 wipes the memory before it hands
    it back (``free_cbk``), as it does before ``free()``."""

    size = 8 << 20  # Keycloak's 7 MiB fits; a larger imported hash gets memory from malloc

    def __init__(self):
        # Private: a process forked after its first hash writes its own copy, never its parent's.
        self._map = mmap.mmap(-1, self.size + _HUGE_PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        if hasattr(mmap, "MADV_HUGEPAGE"):
            self._map.madvise(mmap.MADV_HUGEPAGE)
        start = ffi.from_buffer(self._map)
        self.memory = start + (-int(ffi.cast("uintptr_t", start)) % _HUGE_PAGE)
        self.allocate = ffi.callback("int(uint8_t **, size_t)", self._allocate,
                                     error=lib.ARGON2_MEMORY_ALLOCATION_ERROR)
        self.free = ffi.callback("void(uint8_t *, size_t)", lambda memory, size: None)

    def _allocate(self, memory, size):
        if size > self.size:
            return lib.ARGON2_MEMORY_ALLOCATION_ERROR
        memory[0] = self.memory
        return lib.ARGON2_OK


# Argon2 hashes computed at once in this process: no more than the cores it may run on, each in
# an arena of its own. Each walks 7 MiB; more at once on the same core only evict each other's
# blocks from the caches. Threads waiting here use no CPU. Last in, first out: the arena used
# last is the likeliest still cached. Arenas are made on first use.
_ARENAS = queue.LifoQueue()
for _ in range(len(os.sched_getaffinity(0))):
    _ARENAS.put(None)


@contextmanager
def _arena():
    arena = _ARENAS.get()
    try:
        if arena is None:
            arena = _Arena()
        yield arena
    finally:
        _ARENAS.put(arena)


def argon2_raw(secret, salt, *, time_cost, memory_cost, parallelism, hash_len, type, version=ARGON2_VERSION):
    """argon2-cffi's ``hash_secret_raw``, computed in one of this process's arenas (waiting for
    one while as many hashes run as the process has cores)."""
    out = ffi.new("uint8_t[]", hash_len)
    secret_buffer, salt_buffer = ffi.new("uint8_t[]", secret), ffi.new("uint8_t[]", salt)
    with _arena() as arena:
        fits = memory_cost * 1024 <= arena.size
        context = ffi.new("argon2_context *", {
            "out": out, "outlen": hash_len, "pwd": secret_buffer, "pwdlen": len(secret),
            "salt": salt_buffer, "saltlen": len(salt), "secret": ffi.NULL, "secretlen": 0, "ad": ffi.NULL,
            "adlen": 0, "t_cost": time_cost, "m_cost": memory_cost, "lanes": parallelism, "threads": parallelism,
            "version": version, "allocate_cbk": arena.allocate if fits else ffi.NULL,
            "free_cbk": arena.free if fits else ffi.NULL, "flags": lib.ARGON2_DEFAULT_FLAGS,
        })
        code = core(context, type.value)
    if code != lib.ARGON2_OK:
        raise HashingError(error_to_str(code))
    return bytes(ffi.buffer(out, hash_len))


class Argon2idHasher(Argon2PasswordHasher):
    """Argon2id with Keycloak's default parameters (m=7 MiB, t=5, p=1), one of the equivalent
    minimum configurations OWASP lists (with m=19 MiB/t=2 and m=12 MiB/t=3). Of those it is the
    cheapest here in CPU per check, which leaves room for tens of sign-ins per core-second.
    Django's hasher and encoding (the PHC string argon2-cffi writes and reads), the hash computed
    by ``argon2_raw``: argon2-cffi's C library, in the build for the vector units of the CPU the
    process runs on (``realms.credentials.argon2_build``, decision 0058), in a kept arena (decision 0054)."""

    time_cost = 5
    memory_cost = 7168
    parallelism = 1

    def encode(self, password, salt):
        params = self.params()
        raw = argon2_raw(password.encode(), salt.encode(), time_cost=params.time_cost, memory_cost=params.memory_cost,
                         parallelism=params.parallelism, hash_len=params.hash_len, type=params.type)
        return (f"{self.algorithm}$argon2{params.type.name.lower()}$v={ARGON2_VERSION}"
                f"$m={params.memory_cost},t={params.time_cost},p={params.parallelism}"
                f"${_b64e(salt.encode()).rstrip('=')}${_b64e(raw).rstrip('=')}")

    def must_update(self, encoded):
        # Other parameters than the policy's. (Django also counts the salt's entropy in
        # alphanumeric characters, which would call the 16 random bytes of earlier hashes short of
        # 128 bits.)
        current = self.decode(encoded)["params"]
        wanted = self.params()
        wanted.salt_len = current.salt_len
        return current != wanted

    def verify(self, password, encoded):
        decoded = self.decode(encoded)
        params, digest = decoded["params"], decoded["hash"]
        expected = base64.b64decode(digest + "=" * (-len(digest) % 4))
        derived = argon2_raw(password.encode(), decoded["salt"].encode("latin1"), time_cost=params.time_cost,
                             memory_cost=params.memory_cost, parallelism=params.parallelism,
                             hash_len=len(expected), type=params.type, version=params.version)
        return constant_time_compare(derived, expected)


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
        derived = argon2_raw(
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

