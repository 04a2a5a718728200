"""The CPU one Argon2id password check costs with the production hasher and parameters (the floor
a local sign-in pays and a brokered one does not), in µs: the median of ``N`` checks.

Usage: argon2_cost.py [N]"""
import os
import statistics
import sys
import time

import django

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.broker.settings")
django.setup()

from realms.credentials.hashers import Argon2idHasher  # noqa: E402

hasher = Argon2idHasher()
encoded = hasher.encode("bench-password-1", hasher.salt())
costs = []
for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 30):
    start = time.process_time()
    assert hasher.verify("bench-password-1", encoded)
    costs.append(time.process_time() - start)
print(f"argon2id_check_cpu_us={statistics.median(costs) * 1e6:.0f}")
