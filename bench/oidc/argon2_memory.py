"""CPU of one Argon2id hash at Keycloak's parameters (m = 7 MiB, t = 5, p = 1) with the
project's kept arena on transparent huge pages (``realms.credentials.hashers.argon2_raw``, decision 0054),
against the same C library with ``malloc``'s memory (argon2-cffi's ``hash_secret_raw``).

The two run alternately, one hash at a time, in one process, so that a slow moment of the
machine falls on both alike. Prints the median and the tenth percentile of each, and the page
faults and kernel time per hash. Pin it to a core: ``taskset -c 0 python bench/oidc/argon2_memory.py [N]``.
"""
import os
import resource
import statistics
import sys
import time

import django
from django.conf import settings

settings.configure()
django.setup()

from argon2.low_level import Type, hash_secret_raw  # noqa: E402

from realms.credentials.hashers import argon2_raw  # noqa: E402

PARAMS = {"time_cost": 5, "memory_cost": 7168, "parallelism": 1, "hash_len": 32, "type": Type.ID}
WAYS = {
    "argon2-cffi, malloc's memory": lambda: hash_secret_raw(b"Created-pass-1", b"0123456789abcdef", **PARAMS),
    "kept arena, huge pages": lambda: argon2_raw(b"Created-pass-1", b"0123456789abcdef", **PARAMS),
}


def main():
    n = int((sys.argv[1:] or ["300"])[0])
    assert len({way() for way in WAYS.values()}) == 1  # the same hash, bit for bit
    cpu = {name: [] for name in WAYS}
    kernel = dict.fromkeys(WAYS, 0.0)
    faults = dict.fromkeys(WAYS, 0)
    for _ in range(n):
        for name, way in WAYS.items():
            before, started = resource.getrusage(resource.RUSAGE_SELF), time.process_time()
            way()
            cpu[name].append(time.process_time() - started)
            after = resource.getrusage(resource.RUSAGE_SELF)
            kernel[name] += after.ru_stime - before.ru_stime
            faults[name] += after.ru_minflt - before.ru_minflt
    thp = open("/sys/kernel/mm/transparent_hugepage/enabled").read().strip()
    print(f"{n} hashes each, alternating ({time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}, "
          f"load average {' '.join(open('/proc/loadavg').read().split()[:3])}, transparent huge pages: {thp}, "
          f"cores {sorted(os.sched_getaffinity(0))})")
    for name, spent in cpu.items():
        spent.sort()
        print(f"  {name}: median {statistics.median(spent) * 1000:.2f} ms, tenth percentile "
              f"{spent[len(spent) // 10] * 1000:.2f} ms; kernel {kernel[name] / n * 1000:.3f} ms, "
              f"{faults[name] / n:.1f} page faults per hash")


if __name__ == "__main__":
    main()
