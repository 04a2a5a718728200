"""Client-credentials grants with and without DPoP (RFC 9449), from one load generator, so that
both run through the same client code: ``CONCURRENCY`` threads, each with its own keep-alive
connection and, for ``dpop``, its own ES256 key and a fresh proof (new ``jti``, current ``iat``)
per request, signed here, on the load generator's core, never on the server's.

Prints requests, errors, req/s and p50/p99; the caller measures the server's CPU around it.
Usage: dpop_load.py BASE_URL DURATION CONCURRENCY plain|dpop
"""
import base64
import http.client
import json
import os
import sys
import threading
import time
import uuid
from urllib.parse import urlsplit

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from bench.oidc.users import CLIENT, REALM, SECRET  # noqa: E402


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class Prover:
    def __init__(self):
        self.key = ec.generate_private_key(ec.SECP256R1())
        numbers = self.key.public_key().public_numbers()
        jwk = {"kty": "EC", "crv": "P-256", "x": b64(numbers.x.to_bytes(32, "big")),
               "y": b64(numbers.y.to_bytes(32, "big"))}
        self.head = b64(json.dumps({"typ": "dpop+jwt", "alg": "ES256", "jwk": jwk}, separators=(",", ":")).encode())

    def proof(self, htu):
        body = b64(json.dumps({"jti": str(uuid.uuid4()), "htm": "POST", "htu": htu, "iat": int(time.time())},
                              separators=(",", ":")).encode())
        signing_input = f"{self.head}.{body}"
        r, s = decode_dss_signature(self.key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
        return f"{signing_input}.{b64(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"


def main():
    base, duration, concurrency, kind = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    url = f"{base}/realms/{REALM}/protocol/openid-connect/token"
    parts = urlsplit(url)
    auth = "Basic " + base64.b64encode(f"{CLIENT}:{SECRET}".encode()).decode()
    form = b"grant_type=client_credentials"
    latencies, errors = [], []
    stop = time.monotonic() + duration

    def worker():
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        prover = Prover() if kind == "dpop" else None
        while time.monotonic() < stop:
            headers = {"Authorization": auth, "Content-Type": "application/x-www-form-urlencoded"}
            if prover:
                headers["DPoP"] = prover.proof(url)
            start = time.perf_counter()
            try:
                connection.request("POST", parts.path, form, headers)
                response = connection.getresponse()
                body = response.read()
                if response.status != 200 or (prover and b'"DPoP"' not in body):
                    errors.append(f"{response.status} {body[:200]!r}")
                else:
                    latencies.append(time.perf_counter() - start)
            except (OSError, http.client.HTTPException) as exc:  # counted and reported, never hidden
                errors.append(repr(exc))
                connection.close()

    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    began = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(duration + 60)
    elapsed = time.monotonic() - began
    latencies.sort()
    n = len(latencies)
    p = lambda q: latencies[min(n - 1, int(q * n))] * 1000 if n else float("nan")  # noqa: E731
    line = f"requests={n} errors={len(errors)} req_per_s={n / elapsed:.0f} p50_ms={p(0.5):.1f} p99_ms={p(0.99):.1f}"
    if errors:
        line += f"\nfirst error: {errors[0]}"
    print(line)


if __name__ == "__main__":
    main()
