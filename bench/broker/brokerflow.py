"""Brokered sign-ins as a browser plus a relying party run them: our authorization endpoint with
``kc_idp_hint=upstream`` (the redirector sends the browser to the upstream provider), the
upstream's authorization endpoint (the browser already signed in there: it answers at once),
our broker endpoint (code exchanged with the upstream, ID token checked against its cached JWKS,
userinfo, the linked user signed in), then the code exchanged at our token endpoint.

Each thread is one browser that signed in at the upstream once (its SSO cookie kept); every flow
starts with none of our cookies, as a new visitor. ``CONCURRENCY`` flows run at once for
``DURATION`` seconds; prints flows/s, p50/p99 latency of a whole flow, and the CPU our server
(``SERVER_PID`` and its children) spent per flow during the measured flows only (the browsers'
first visits, which sign in at the upstream, come before).

``password`` as a fifth argument runs the local sign-in instead (bench/oidc/codeflow.py's login
form and code exchange), measured the same way: the figure a brokered sign-in is compared with.

Usage: brokerflow.py DOWNSTREAM_BASE DURATION CONCURRENCY SERVER_PID [password]"""
import base64
import hashlib
import os
import secrets
import sys
from urllib.parse import parse_qs, urlencode, urlsplit

import requests

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from bench.oidc import codeflow  # noqa: E402
from bench.oidc.users import CLIENT, PASSWORD, REALM, REDIRECT, SECRET, USER  # noqa: E402


def _forget_ours(browser):
    for cookie in [c for c in browser.cookies if c.path.startswith(f"/realms/{REALM}")]:
        browser.cookies.clear(cookie.domain, cookie.path, cookie.name)


def one_flow(base, browser, relying_party):
    _forget_ours(browser)
    verifier = secrets.token_urlsafe(32)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    oidc = f"{base}/realms/{REALM}/protocol/openid-connect"
    answer = browser.get(f"{oidc}/auth?" + urlencode({
        "response_type": "code", "client_id": CLIENT, "redirect_uri": REDIRECT, "scope": "openid",
        "state": secrets.token_urlsafe(8), "code_challenge": challenge, "code_challenge_method": "S256",
        "kc_idp_hint": "upstream"}), allow_redirects=False, timeout=30)
    upstream = browser.get(answer.headers["Location"], allow_redirects=False, timeout=30)
    if upstream.status_code == 200:  # this browser's first visit: the upstream's login form
        upstream = codeflow._post_form(browser, upstream, {"username": USER, "password": PASSWORD})
    back = browser.get(upstream.headers["Location"], allow_redirects=False, timeout=30)
    code = parse_qs(urlsplit(back.headers["Location"]).query)["code"][0]
    token = relying_party.post(f"{oidc}/token", data={"grant_type": "authorization_code", "code": code,
                                                      "redirect_uri": REDIRECT, "code_verifier": verifier},
                               auth=(CLIENT, SECRET), timeout=30)
    token.raise_for_status()
    return token.json()


def cpu_seconds(pid):
    """User + system CPU of ``pid`` and its children (Granian's workers), in seconds."""
    pids = [pid, *open(f"/proc/{pid}/task/{pid}/children").read().split()]
    total = 0
    for p in pids:
        fields = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def main():
    base, duration, concurrency, server = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    flow = one_flow
    if sys.argv[5:] == ["password"]:
        def flow(base, browser, relying_party):
            return codeflow.one_flow(base, relying_party)
    browsers = [requests.Session() for _ in range(concurrency)]
    for browser in browsers:  # each browser signs in at the upstream once (not measured)
        flow(base, browser, requests.Session())
    before = cpu_seconds(server)
    line, n = codeflow.run_concurrently(lambda browser, rp: flow(base, browser, rp), browsers, duration)
    cpu = cpu_seconds(server) - before
    first, _, rest = line.partition("\n")
    print(f"{first} server_cpu_per_flow_us={cpu / max(n, 1) * 1e6:.0f}" + (f"\n{rest}" if rest else ""))


if __name__ == "__main__":
    main()
