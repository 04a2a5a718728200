"""What the password hash costs the rest of a user creation: the CPU of ``POST users`` besides
the hash, with the hash done three ways, in alternating rounds of one process (the machine's
speed drifts by a fifth from one minute to the next):

- ``hash``: the realm's Argon2id (Keycloak's parameters, 7 MiB), as served;
- ``constant``: one hash made once and reused, so no hashing work at all;
- ``compute``: the constant, plus Argon2id over 64 KiB with as many passes as take about as long
  as the real hash: the same kind of work without sweeping 7 MiB of memory.

The hash's own CPU (timed around ``password_policy.hash_password``) is taken off each figure.
Prints the median per mode of the rest and of the hash. Usage, pinned to a core:
``taskset -c 0 python bench/admin_api/after_hash.py [ROUNDS] [N]``   (env as create_cpu.py)
"""
import statistics
import sys
import time

from argon2.low_level import Type

from bench.admin_api.create_cpu import REALM, admin_token, create
from realms.credentials import password_policy
from realms.credentials.hashers import argon2_raw
from realms.models import Realm
from realms.representation.services import create_realm

MODES = ("hash", "constant", "compute")


def main():
    rounds, n = (int(x) for x in (sys.argv[1:] + ["6", "150"])[:2])
    Realm.objects.filter(name=REALM).exists() or create_realm(REALM)
    hash_password, mode, spent, constant = password_policy.hash_password, ["hash"], [0.0], []
    passes = [5]

    def timed(realm, password):
        started = time.process_time()
        try:
            if mode[0] == "hash":
                return hash_password(realm, password)
            if mode[0] == "compute":
                argon2_raw(password.encode(), b"0123456789abcdef", time_cost=passes[0], memory_cost=64,
                           parallelism=1, hash_len=32, type=Type.ID)
            return constant[0]
        finally:
            spent[0] += time.process_time() - started

    password_policy.hash_password = timed
    constant.append(hash_password(Realm.objects.get(name=REALM), "Created-pass-1"))
    token = admin_token()
    for _ in range(10):
        create(token)
    # As many passes over 64 KiB as take the real hash's time.
    started = time.process_time()
    hash_password(Realm.objects.get(name=REALM), "Created-pass-1")
    real = time.process_time() - started
    started = time.process_time()
    argon2_raw(b"x", b"0123456789abcdef", time_cost=100, memory_cost=64, parallelism=1, hash_len=32, type=Type.ID)
    passes[0] = max(1, round(100 * real / (time.process_time() - started)))
    rest, hashing = {m: [] for m in MODES}, {m: [] for m in MODES}
    for round_ in range(rounds):
        token = admin_token()  # the master realm's tokens are short-lived
        for m in MODES if round_ % 2 == 0 else MODES[::-1]:
            mode[0], spent[0] = m, 0.0
            started = time.process_time()
            for _ in range(n):
                create(token)
            total = (time.process_time() - started) / n
            rest[m].append((total - spent[0] / n) * 1000)
            hashing[m].append(spent[0] / n * 1000)
    print(f"POST users, the rest besides the hash ({time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}, "
          f"{rounds} rounds of {n}, load average {' '.join(open('/proc/loadavg').read().split()[:3])}; "
          f"compute: {passes[0]} passes over 64 KiB)")
    for m in MODES:
        print(f"  {m:8}: rest median {statistics.median(rest[m]):.2f} ms ({' '.join(f'{x:.2f}' for x in rest[m])}); "
              f"in the hash's place {statistics.median(hashing[m]):.2f} ms")


if __name__ == "__main__":
    main()
