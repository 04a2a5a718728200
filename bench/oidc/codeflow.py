"""Full authorization-code flows with PKCE, as a browser plus a relying party would run them:
GET the authorization endpoint (login page), sign in, exchange the code at the token endpoint.
``CONCURRENCY`` flows run at once for ``DURATION`` seconds; prints flows/s and p50/p99 latency
of a whole flow. How the user signs in (``KIND``):

- ``password``: the login form (Argon2id check, session, code);
- ``totp``: the login form, then the one-time-code form of the 2FA sub-flow (a code computed
  here, RFC 6238); a code is good once, so each thread spreads its flows over its own users;
- ``passkey``: the passkey on the login form ("Enable Passkeys"): the page's challenge signed by
  a software authenticator (bench/soft_authenticator.py, ECDSA P-256), one user per thread so
  that each passkey's sign counter only goes up.

Each flow is a new browser (a new connection, no cookies); each of the ``CONCURRENCY`` relying
parties keeps its connection to the token endpoint open between flows, as an application's HTTP
client pool does.

Usage: codeflow.py BASE_URL DURATION CONCURRENCY [password|totp|passkey]
"""
import base64
import hashlib
import hmac
import html
import json
import os
import re
import secrets
import struct
import sys
import threading
import time
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import requests

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from bench.oidc.users import (  # noqa: E402
    CLIENT,
    PASSKEY_REALM,
    PASSKEY_USERS,
    PASSWORD,
    REALM,
    REDIRECT,
    SECRET,
    TOTP_USERS,
    USER,
    passkey_seed,
    passkey_user_id,
    totp_secret,
    totp_user,
)
from bench.soft_authenticator import SoftAuthenticator  # noqa: E402

FORM = re.compile(r'<form[^>]*\saction="([^"]+)"')
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
OPTIONS = re.compile(r'<script id="webauthn-options" type="application/json">(.*?)</script>', re.S)


def totp(secret, step):
    """RFC 6238 with Keycloak's defaults (HMAC-SHA1, 6 digits); the key is the secret's bytes."""
    digest = hmac.new(secret.encode(), struct.pack(">Q", step), hashlib.sha1).digest()
    offset = digest[-1] & 0x0F
    return str((struct.unpack(">I", digest[offset:offset + 4])[0] & 0x7FFFFFFF) % 10**6).zfill(6)


class TotpUsers:
    """One thread's users and the codes they have used: look-ahead 1 accepts the previous, the
    current and the next period's code, each once."""

    def __init__(self, numbers):
        self.numbers, self.used, self.turn = numbers, set(), 0

    def next(self):
        for _ in range(len(self.numbers) * 3):
            n = self.numbers[self.turn % len(self.numbers)]
            self.turn += 1
            now = int(time.time()) // 30
            for step in (now, now + 1, now - 1):
                if (n, step) not in self.used:
                    self.used.add((n, step))
                    return totp_user(n), totp(totp_secret(n), step)
        raise RuntimeError("every code of this thread's users is used: add TOTP users")


def _post_form(browser, page, data):
    action = html.unescape(FORM.search(page.text).group(1))
    return browser.post(urljoin(page.url, action), data={"csrfmiddlewaretoken": CSRF.search(page.text).group(1), **data},
                        headers={"Referer": page.url}, allow_redirects=False, timeout=30)


def one_flow(base, relying_party, kind="password", signer=None):
    browser = requests.Session()
    verifier = secrets.token_urlsafe(32)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    realm = PASSKEY_REALM if kind == "passkey" else REALM
    oidc = f"{base}/realms/{realm}/protocol/openid-connect"
    page = browser.get(f"{oidc}/auth?" + urlencode({
        "response_type": "code", "client_id": CLIENT, "redirect_uri": REDIRECT, "scope": "openid",
        "state": secrets.token_urlsafe(8), "code_challenge": challenge, "code_challenge_method": "S256"}), timeout=30)
    if kind == "passkey":
        options = json.loads(html.unescape(OPTIONS.search(page.text).group(1)))
        origin = "{0.scheme}://{0.netloc}".format(urlsplit(base))
        login = _post_form(browser, page, signer.assertion(options["challenge"], origin))
    elif kind == "totp":
        username, code = signer.next()
        otp_page = _post_form(browser, page, {"username": username, "password": PASSWORD})
        otp_page.raise_for_status()
        login = _post_form(browser, otp_page, {"otp": code})
    else:
        login = _post_form(browser, page, {"username": USER, "password": PASSWORD})
    code = parse_qs(urlsplit(login.headers["Location"]).query)["code"][0]
    token = relying_party.post(f"{oidc}/token", data={"grant_type": "authorization_code", "code": code,
                                                      "redirect_uri": REDIRECT, "code_verifier": verifier},
                               auth=(CLIENT, SECRET), timeout=30)
    token.raise_for_status()
    return token.json()


def signers(kind, base, concurrency):
    """Per thread: its passkey (one user each) or its TOTP users; nothing for passwords."""
    if kind == "passkey":
        if concurrency > PASSKEY_USERS:
            raise SystemExit(f"at most {PASSKEY_USERS} concurrent passkey flows (one user each)")
        rp_id = urlsplit(base).hostname
        # Counters start from the clock (tenths of seconds since 2023-11) so that each run's go
        # past the last run's and stay within 32 bits for decades.
        return [SoftAuthenticator.from_seed(passkey_seed(t), rp_id, user_handle=passkey_user_id(t).encode(),
                                            counter=int(time.time() * 10) - 17_000_000_000) for t in range(concurrency)]
    if kind == "totp":
        return [TotpUsers(list(range(t, TOTP_USERS, concurrency))) for t in range(concurrency)]
    return [None] * concurrency


def run_concurrently(flow, states, duration):
    """``flow(state, relying_party)`` from one thread per state for ``duration`` seconds: the
    summary line (flows, errors, flows/s, p50/p99 of a whole flow) and the flows completed."""
    latencies, errors = [], []
    stop = time.monotonic() + duration

    def worker(state):
        relying_party = requests.Session()
        while time.monotonic() < stop:
            start = time.perf_counter()
            try:
                flow(state, relying_party)
                latencies.append(time.perf_counter() - start)
            except Exception as exc:  # counted and reported, never hidden
                errors.append(repr(exc))

    threads = [threading.Thread(target=worker, args=(state,)) for state in states]
    began = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(duration + 60)
    elapsed = time.monotonic() - began
    latencies.sort()
    n = len(latencies)
    p = lambda q: latencies[min(n - 1, int(q * n))] * 1000 if n else float("nan")  # noqa: E731
    line = f"flows={n} errors={len(errors)} flows_per_s={n / elapsed:.1f} p50_ms={p(0.5):.0f} p99_ms={p(0.99):.0f}"
    if errors:
        line += f"\nfirst error: {errors[0]}"
    return line, n


def main():
    base, duration, concurrency = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    kind = sys.argv[4] if len(sys.argv) > 4 else "password"
    per_thread = signers(kind, base, concurrency)
    one_flow(base, requests.Session(), kind, per_thread[0])  # warm-up and a correctness check
    line, _ = run_concurrently(lambda signer, rp: one_flow(base, rp, kind, signer), per_thread, duration)
    print(line)


if __name__ == "__main__":
    main()
