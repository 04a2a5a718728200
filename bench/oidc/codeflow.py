"""Full authorization-code flows with PKCE, as a browser plus a relying party would run them:
GET the authorization endpoint (login page), POST the login form (Argon2id check, session,
code), exchange the code at the token endpoint. ``CONCURRENCY`` flows run at once for
``DURATION`` seconds; prints flows/s and p50/p99 latency of a whole flow.

Each flow is a new browser (a new connection, no cookies); each of the ``CONCURRENCY`` relying
parties keeps its connection to the token endpoint open between flows, as an application's HTTP
client pool does.

Usage: codeflow.py BASE_URL DURATION CONCURRENCY
"""
import base64
import hashlib
import html
import re
import secrets
import sys
import threading
import time
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import requests

REALM, CLIENT, SECRET = "bench", "bench-app", "bench-secret-0123456789abcdefghijklmnop"
USER, PASSWORD = "bench-user", "bench-password-1"
REDIRECT = "http://127.0.0.1/cb"
FORM = re.compile(r'<form method="post" action="([^"]+)"')
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


def one_flow(base, relying_party):
    browser = requests.Session()
    verifier = secrets.token_urlsafe(32)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    oidc = f"{base}/realms/{REALM}/protocol/openid-connect"
    page = browser.get(f"{oidc}/auth?" + urlencode({
        "response_type": "code", "client_id": CLIENT, "redirect_uri": REDIRECT, "scope": "openid",
        "state": secrets.token_urlsafe(8), "code_challenge": challenge, "code_challenge_method": "S256"}), timeout=30)
    action = html.unescape(FORM.search(page.text).group(1))
    login = browser.post(urljoin(page.url, action), data={
        "csrfmiddlewaretoken": CSRF.search(page.text).group(1), "username": USER, "password": PASSWORD},
        headers={"Referer": page.url}, allow_redirects=False, timeout=30)
    code = parse_qs(urlsplit(login.headers["Location"]).query)["code"][0]
    token = relying_party.post(f"{oidc}/token", data={"grant_type": "authorization_code", "code": code,
                                                      "redirect_uri": REDIRECT, "code_verifier": verifier},
                               auth=(CLIENT, SECRET), timeout=30)
    token.raise_for_status()
    return token.json()


def main():
    base, duration, concurrency = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    one_flow(base, requests.Session())  # warm-up and a correctness check
    latencies, errors = [], []
    stop = time.monotonic() + duration

    def worker():
        relying_party = requests.Session()
        while time.monotonic() < stop:
            start = time.perf_counter()
            try:
                one_flow(base, relying_party)
                latencies.append(time.perf_counter() - start)
            except Exception as exc:  # counted and reported, never hidden
                errors.append(repr(exc))

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
    print(f"flows={n} errors={len(errors)} flows_per_s={n / elapsed:.1f} p50_ms={p(0.5):.0f} p99_ms={p(0.99):.0f}")
    if errors:
        print("first error:", errors[0])


if __name__ == "__main__":
    main()
