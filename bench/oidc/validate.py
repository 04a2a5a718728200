"""Local access-token validations per second in the resource-server helper, on one core:
signature (RS256) against the JWKS fetched from the server, iss, aud, exp, algorithm. Reports
wall-clock and CPU time per validation.

Usage: validate.py BASE_URL SECONDS  (needs DJANGO_SETTINGS_MODULE for the helper's imports)
"""
import os
import sys
import time

import django
import requests

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.oidc.settings")
django.setup()

from oidc.resource_server import BearerValidator  # noqa: E402

base, seconds = sys.argv[1], float(sys.argv[2])
issuer = f"{base}/realms/bench"
token = requests.post(f"{issuer}/protocol/openid-connect/token", data={"grant_type": "client_credentials"},
                      auth=("bench-app", "bench-secret-0123456789abcdefghijklmnop"), timeout=10).json()["access_token"]
validator = BearerValidator(issuer=issuer, audience="demo-api")
validator.validate(token)
n, start, cpu = 0, time.perf_counter(), time.process_time()
while time.perf_counter() - start < seconds:
    for _ in range(1000):
        validator.validate(token)
    n += 1000
elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
print(f"validations={n} per_s={n / elapsed:.0f} mean_us={elapsed / n * 1e6:.1f}"
      f" | CPU/validation {cpu / n * 1e6:.1f} µs ({n / cpu:.0f}/s per core)")
