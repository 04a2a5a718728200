"""TLS towards the upstream (verification, mutual TLS, reload) and access-token injection."""
from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import json
import shutil
import time
from urllib.parse import parse_qs

import requests

from .helpers import Resp, metric_value, server_context, wait_for


def tls_cfg(u, tls, **route):
    r = {"match": {"path_prefix": "/"}, "upstream": "svc", "retry": {"max": 0}}
    r.update(route)
    return {"upstreams": {"svc": {"instances": [u.addr], "tls": tls}}, "routes": [r]}


def test_tls_server_verified_against_ca_and_name(upstream, proxy, pki):
    cert, key = pki["server"]
    u = upstream("tls", ssl_ctx=server_context(cert, key))
    p = proxy(tls_cfg(u, {"ca": str(pki["ca"].path), "server_name": "orders.internal"}))
    r = requests.get(p.url + "/x", timeout=5)
    assert r.status_code == 200 and r.json()["instance"] == "tls"
    bad_name = proxy(tls_cfg(u, {"ca": str(pki["ca"].path), "server_name": "payments.internal"}))
    r = requests.get(bad_name.url + "/x", timeout=5)
    assert r.status_code == 502 and r.json()["error"] == "connect_failure" and "TLS" in r.json()["detail"]
    wrong_ca = proxy(tls_cfg(u, {"ca": str(pki["other"].path), "server_name": "orders.internal"}))
    assert requests.get(wrong_ca.url + "/x", timeout=5).status_code == 502


def test_impostor_certificate_is_refused(upstream, proxy, pki):
    cert, key = pki["wrong"]
    u = upstream("impostor", ssl_ctx=server_context(cert, key))
    p = proxy(tls_cfg(u, {"ca": str(pki["ca"].path), "server_name": "orders.internal"}))
    r = requests.get(p.url + "/x", timeout=5)
    assert r.status_code == 502 and "certificate" in r.json()["detail"].lower()
    assert u.count() == 0


def test_mutual_tls_presents_client_certificate(upstream, proxy, pki):
    cert, key = pki["server"]
    u = upstream("mtls", ssl_ctx=server_context(cert, key, client_ca=pki["ca"].path))
    ccert, ckey = pki["client"]
    p = proxy(tls_cfg(u, {"ca": str(pki["ca"].path), "cert": str(ccert), "key": str(ckey),
                          "server_name": "localhost"}))
    r = requests.get(p.url + "/x", timeout=5)
    assert r.status_code == 200 and r.json()["peer_cn"] == "orders-caller"
    no_cert = proxy(tls_cfg(u, {"ca": str(pki["ca"].path), "server_name": "localhost"}))
    assert requests.get(no_cert.url + "/x", timeout=5).status_code == 502
    assert u.count() == 1


def test_client_certificate_reloaded_on_file_change(upstream, proxy, pki, tmp_path):
    cert, key = pki["server"]
    u = upstream("mtls", ssl_ctx=server_context(cert, key, client_ca=pki["ca"].path))
    # Start with a client certificate the server does not trust, then rotate the files in place.
    bad_cert, bad_key = pki["other"].issue("stale-client", client=True)
    live_cert, live_key = tmp_path / "client.pem", tmp_path / "client.key"
    shutil.copy(bad_cert, live_cert)
    shutil.copy(bad_key, live_key)
    p = proxy(tls_cfg(u, {"ca": str(pki["ca"].path), "cert": str(live_cert), "key": str(live_key),
                          "server_name": "localhost", "reload_check": "100ms"}))
    assert requests.get(p.url + "/x", timeout=5).status_code == 502
    good_cert, good_key = pki["client"]
    shutil.copy(good_key, live_key)
    shutil.copy(good_cert, live_cert)
    time.sleep(0.15)
    r = requests.get(p.url + "/x", timeout=5)
    assert r.status_code == 200 and r.json()["peer_cn"] == "orders-caller"
    assert metric_value(p.metrics(), "ambassador_tls_reloads_total", upstream="svc") == 1


# ------------------------------------------------------------------------------------- tokens
class TokenServer:
    """A client-credentials token endpoint that counts its fetches."""

    def __init__(self, upstream, lifetime=60.0, delay=0.0, secret="s3cret"):
        self.lifetime, self.delay, self.secret = lifetime, delay, secret
        self.issued: dict[str, float] = {}
        self.forms: list[dict] = []
        self.auth: list[str | None] = []
        self.fail = False
        self.u = upstream("idp", handler=self.handle)
        self.url = f"http://{self.u.addr}/realms/r/protocol/openid-connect/token"

    @property
    def fetches(self) -> int:
        return len(self.issued)

    async def handle(self, req):
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.fail:
            return Resp(500, b'{"error": "server_error"}')
        form = {k: v[0] for k, v in parse_qs(req.body.decode()).items()}
        self.forms.append(form)
        self.auth.append(req.h.get("authorization"))
        tok = f"tok-{len(self.issued) + 1}"
        self.issued[tok] = time.monotonic()
        return Resp(200, json.dumps({"access_token": tok, "token_type": "Bearer",
                                     "expires_in": self.lifetime}).encode(), {"Content-Type": "application/json"})

    def valid(self, header: str | None) -> bool:
        if not header or not header.startswith("Bearer "):
            return False
        issued = self.issued.get(header[7:])
        return issued is not None and time.monotonic() < issued + self.lifetime


def protected(ts: TokenServer, seen: list, revoked=()):
    def handler(req):
        auth = req.h.get("authorization")
        seen.append(auth)
        if auth and auth[7:] in revoked:
            return Resp(401, b'{"error": "invalid_token"}')
        if not ts.valid(auth):
            return Resp(401, b'{"error": "invalid_token"}')
        return Resp(200, json.dumps({"auth": auth}).encode())
    return handler


def token_cfg(u, ts: TokenServer, **token):
    t = {"token_url": ts.url, "client_id": "orders-caller", "client_secret": ts.secret, "scope": "orders"}
    t.update(token)
    return {"upstreams": {"svc": {"instances": [u.addr], "token": t}},
            "routes": [{"match": {"path_prefix": "/"}, "upstream": "svc", "retry": {"max": 0}}]}


def test_token_is_added_and_cached(upstream, proxy):
    ts = TokenServer(upstream)
    seen = []
    u = upstream("api", handler=protected(ts, seen))
    p = proxy(token_cfg(u, ts))
    for _ in range(20):
        r = requests.get(p.url + "/x", headers={"Authorization": "Bearer client-own"}, timeout=5)
        assert r.status_code == 200
    assert ts.fetches == 1
    assert set(seen) == {"Bearer tok-1"}  # the client's own Authorization does not pass
    assert ts.forms[0] == {"grant_type": "client_credentials", "scope": "orders"}
    assert ts.auth[0] == "Basic " + base64.b64encode(b"orders-caller:s3cret").decode()
    assert metric_value(p.metrics(), "ambassador_token_refreshes_total", outcome="ok") == 1


def test_client_secret_post_and_secret_file(upstream, proxy, tmp_path):
    ts = TokenServer(upstream)
    u = upstream("api", handler=protected(ts, []))
    (tmp_path / "secret.txt").write_text("s3cret\n")
    p = proxy(token_cfg(u, ts, auth="post", client_secret=None, client_secret_file=str(tmp_path / "secret.txt")))
    assert requests.get(p.url + "/x", timeout=5).status_code == 200
    assert ts.forms[0]["client_id"] == "orders-caller" and ts.forms[0]["client_secret"] == "s3cret"
    assert ts.auth[0] is None


def test_single_flight_however_many_requests_wait(upstream, proxy):
    ts = TokenServer(upstream, delay=0.3)
    u = upstream("api", handler=protected(ts, []))
    p = proxy(token_cfg(u, ts))
    with concurrent.futures.ThreadPoolExecutor(30) as pool:
        codes = list(pool.map(lambda _: requests.get(p.url + "/x", timeout=5).status_code, range(30)))
    assert codes == [200] * 30
    assert ts.fetches == 1


def test_token_renewed_at_80_percent_without_a_failed_call(upstream, proxy):
    ts = TokenServer(upstream, lifetime=2.0)
    seen = []
    u = upstream("api", handler=protected(ts, seen))
    p = proxy(token_cfg(u, ts))
    t0 = time.monotonic()
    assert requests.get(p.url + "/x", timeout=5).status_code == 200
    time.sleep(max(0, t0 + 1.0 - time.monotonic()))
    assert requests.get(p.url + "/x", timeout=5).status_code == 200
    assert ts.fetches == 1  # at 50 % of the lifetime the cached token is used
    time.sleep(max(0, t0 + 1.75 - time.monotonic()))
    assert requests.get(p.url + "/x", timeout=5).status_code == 200  # past 80 %: renewal starts
    wait_for(lambda: ts.fetches == 2, timeout=1)
    time.sleep(max(0, t0 + 2.2 - time.monotonic()))  # the first token has now expired
    r = requests.get(p.url + "/x", timeout=5)
    assert r.status_code == 200 and r.json()["auth"] == "Bearer tok-2"
    assert all(ts.valid(a) or a == "Bearer tok-1" for a in seen)
    assert ts.fetches == 2


def test_upstream_401_triggers_one_refresh_and_one_retry(upstream, proxy):
    ts = TokenServer(upstream)
    seen = []
    u = upstream("api", handler=protected(ts, seen, revoked={"tok-1"}))
    p = proxy(token_cfg(u, ts))
    r = requests.post(p.url + "/x", data=b"body", timeout=5)  # even a POST: the 401 means it was refused
    assert r.status_code == 200 and r.json()["auth"] == "Bearer tok-2"
    assert seen == ["Bearer tok-1", "Bearer tok-2"] and ts.fetches == 2

    ts2 = TokenServer(upstream)
    seen2 = []
    always = upstream("api2", handler=lambda req: (seen2.append(req.h.get("authorization")), Resp(401, b"no"))[1])
    p2 = proxy(token_cfg(always, ts2))
    r = requests.get(p2.url + "/x", timeout=5)
    assert r.status_code == 401  # one refresh, one retry, then the upstream's answer
    assert seen2 == ["Bearer tok-1", "Bearer tok-2"] and ts2.fetches == 2


def test_token_endpoint_failure_gives_clean_502(upstream, proxy):
    ts = TokenServer(upstream)
    ts.fail = True
    u = upstream("api", handler=protected(ts, []))
    p = proxy(token_cfg(u, ts))
    r = requests.get(p.url + "/x", timeout=5)
    assert r.status_code == 502 and r.json()["error"] == "token_unavailable" and u.count() == 0
    assert metric_value(p.metrics(), "ambassador_token_refreshes_total", outcome="error") == 1
