"""The sender's HTTP client, built against server-side request forgery (spec 2 §8).

Only https URLs; the host is resolved once, every address is checked (loopback, private,
link-local including 169.254.169.254, multicast, unique-local fc00::/7, IPv4-mapped and other
embedded IPv4 forms, reserved ...) and the connection goes to the checked address itself, while
TLS still sends SNI and verifies the certificate for the name and the Host header names it, so a
second DNS answer cannot redirect the request. Redirects are not followed, and at most a few
kilobytes of the answer are read. Dev mode and ``IDP_WEBHOOK_ALLOWED_NETWORKS`` /
``IDP_WEBHOOK_ALLOW_HTTP`` can permit http and non-public targets, with a warning.
"""
import ipaddress
import logging
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

import urllib3
from urllib3.exceptions import HTTPError

from . import conf

logger = logging.getLogger("idp.webhooks")


class TargetRefused(Exception):
    """The URL may not be called (scheme, address); the message says why."""


@dataclass
class Target:
    scheme: str
    host: str  # as in the URL (name or literal), used for SNI, certificate check and Host
    port: int
    path: str
    address: str  # the checked IP address the connection goes to


@dataclass
class Response:
    status: int
    headers: dict
    body: bytes
    duration_ms: int


def resolve(host, port):
    """All addresses of ``host`` (one DNS query). Tests replace this to simulate DNS answers."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [info[4][0] for info in infos]


def _embedded_ipv4(ip):
    """IPv4 addresses carried inside an IPv6 one (mapped, 6to4, Teredo, NAT64)."""
    if ip.ipv4_mapped:
        yield ip.ipv4_mapped
    if ip.sixtofour:
        yield ip.sixtofour
    if ip.teredo:
        yield from ip.teredo
    if ip in ipaddress.IPv6Network("64:ff9b::/96"):
        yield ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)


def is_public(address):
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if not ip.is_global or ip.is_multicast or ip.is_reserved or ip.is_unspecified:
        return False
    if ip.version == 6:
        return all(is_public(str(v4)) for v4 in _embedded_ipv4(ip))
    return True


def _allowed_networks():
    return [ipaddress.ip_network(n, strict=False) for n in conf.get("IDP_WEBHOOK_ALLOWED_NETWORKS")]


def check_url(url):
    """Parse and validate a URL without resolving it (what a form or the REST API can check)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise TargetRefused(f"not a valid URL: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in ("https", "http"):
        raise TargetRefused("only https URLs can receive webhooks")
    if scheme == "http" and not conf.get("IDP_WEBHOOK_ALLOW_HTTP"):
        raise TargetRefused("only https URLs can receive webhooks")
    if not parts.hostname:
        raise TargetRefused("the URL has no host")
    if parts.username or parts.password:
        raise TargetRefused("credentials in the URL are not allowed")
    return parts, scheme, port or (443 if scheme == "https" else 80)


def prepare(url):
    """Resolve and check; the returned Target is what ``post`` connects to."""
    parts, scheme, port = check_url(url)
    host = parts.hostname
    try:
        addresses = resolve(host, port)
    except (socket.gaierror, UnicodeError) as exc:
        raise TargetRefused(f"cannot resolve {host}: {exc}") from None
    if not addresses:
        raise TargetRefused(f"{host} has no address")
    allowed = _allowed_networks()
    # Every answer must pass: a name answering both a public and a private address is refused.
    for address in addresses:
        if not is_public(address):
            ip = ipaddress.ip_address(address.split("%", 1)[0])
            if not any(ip in net for net in allowed if net.version == ip.version):
                raise TargetRefused(f"{host} resolves to a non-public address")
    address = addresses[0]
    if scheme == "http" or not is_public(address):
        logger.warning("webhooks: sending to %s://%s (%s) is allowed by configuration only", scheme, host, address)
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return Target(scheme, host, port, path, address)


_pools = {}
_pools_lock = threading.Lock()


def _pool(target):
    key = (target.scheme, target.address, target.port, target.host)
    pool = _pools.get(key)
    if pool is None:
        with _pools_lock:
            pool = _pools.get(key)
            if pool is None:
                common = {"maxsize": 32, "block": False, "retries": False}
                if target.scheme == "https":
                    ctx = ssl.create_default_context(cafile=conf.get("IDP_WEBHOOK_CA_BUNDLE") or None)
                    # Connect to the checked IP; SNI and the certificate check use the name.
                    pool = urllib3.HTTPSConnectionPool(
                        target.address, target.port, ssl_context=ctx, server_hostname=target.host,
                        assert_hostname=target.host, **common)
                else:
                    pool = urllib3.HTTPConnectionPool(target.address, target.port, **common)
                _pools[key] = pool
    return pool


def _host_header(target):
    host = f"[{target.host}]" if ":" in target.host else target.host
    default = 443 if target.scheme == "https" else 80
    return host if target.port == default else f"{host}:{target.port}"


def request(method, target, body, headers, timeout=None, body_limit=None):
    """One request, no redirects, no retries; reads at most ``body_limit`` bytes of the answer.
    Raises urllib3's HTTPError (timeouts, refused connections, TLS failures)."""
    timeout = conf.get("IDP_WEBHOOK_TIMEOUT") if timeout is None else timeout
    limit = conf.get("IDP_WEBHOOK_RESPONSE_BODY_LIMIT") if body_limit is None else body_limit
    started = time.monotonic()
    deadline = started + timeout
    hdrs = {"Host": _host_header(target), "User-Agent": "idp-webhooks/1", **headers}
    resp = _pool(target).urlopen(
        method, target.path, body=body, headers=hdrs, redirect=False, retries=False, assert_same_host=False,
        timeout=urllib3.Timeout(connect=min(timeout, conf.get("IDP_WEBHOOK_CONNECT_TIMEOUT")), read=timeout),
        preload_content=False,
    )
    chunks, size, complete = [], 0, False
    try:
        while size < limit and time.monotonic() < deadline:
            chunk = resp.read(min(4096, limit - size))
            if not chunk:
                complete = True
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        if complete:
            resp.release_conn()
        else:
            # The rest is not read: the connection cannot be reused.
            resp.close()
            resp.release_conn()
    return Response(resp.status, dict(resp.headers), b"".join(chunks),
                    int((time.monotonic() - started) * 1000))


def post(target, body, headers, timeout=None, body_limit=None):
    """POST a webhook body (JSON) to a prepared target."""
    return request("POST", target, body, {"Content-Type": "application/json", **headers}, timeout, body_limit)


__all__ = ["TargetRefused", "HTTPError", "prepare", "post", "request", "check_url", "is_public", "resolve"]
