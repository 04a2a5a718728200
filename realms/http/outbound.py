"""Calling URLs that someone other than the operator chose, safely (server-side request forgery).

Every outbound call to a configured URL goes through here: a client's JWKS URL and back-channel
logout endpoints (OIDC, SAML), webhook receivers. Such a URL must not reach into the service's
own network:

- Only https, unless ``IDP_OUTBOUND_ALLOW_HTTP``; no credentials in the URL.
- The host is resolved once and every address must be public (``is_public``: loopback, private,
  shared, link-local including 169.254.169.254, multicast, unique-local fc00::/7, reserved,
  unspecified, and IPv4 addresses embedded in IPv6 are refused), unless it lies in one of
  ``IDP_OUTBOUND_ALLOWED_NETWORKS`` (CIDR list). Dev mode allows http and loopback by default.
  A call that only configuration allows logs a warning.
- The connection goes to the checked address itself, while TLS sends SNI and verifies the
  certificate for the host name (system CAs, plus ``IDP_OUTBOUND_CA_BUNDLE``) and the Host header
  names it, so a second DNS answer cannot redirect the call. No redirects, no retries, no
  environment proxy, short timeouts, and at most a bounded number of bytes of the answer are read.

``prepare`` + ``request`` keep connections alive per checked address (the webhook sender);
``fetch_json`` and ``post`` are one-shot calls that open and close their own connection.
"""
import ipaddress
import json
import logging
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

import urllib3
from django.conf import settings
from opentelemetry import propagate, trace
from urllib3.exceptions import HTTPError

from ..errors import RealmsError

logger = logging.getLogger("idp.outbound")

USER_AGENT = "idp/1"
JSON_MAX_BYTES = 256 * 1024


class OutboundError(RealmsError):
    """A call that could not be made, or whose answer is unusable; the message says why."""


class TargetRefused(OutboundError):
    """The URL may not be called (scheme, credentials, address); the message says why."""


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


def _setting(name):
    """Read at call time, so that a test (or dev mode) changing a setting takes effect at once."""
    dev = getattr(settings, "IDP_DEV_MODE", False)
    defaults = {
        "IDP_OUTBOUND_ALLOW_HTTP": dev,
        "IDP_OUTBOUND_ALLOWED_NETWORKS": ["127.0.0.0/8", "::1/128"] if dev else [],
        "IDP_OUTBOUND_CA_BUNDLE": "",
    }
    return getattr(settings, name, defaults[name])


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


def is_allowed(address):
    """Public, or inside one of ``IDP_OUTBOUND_ALLOWED_NETWORKS``."""
    if is_public(address):
        return True
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    networks = [ipaddress.ip_network(n, strict=False) for n in _setting("IDP_OUTBOUND_ALLOWED_NETWORKS")]
    return any(ip in net for net in networks if net.version == ip.version)


def check_url(url):
    """Parse and validate a URL without resolving it (what a form or an API can check).
    Returns (parts, scheme, port)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise TargetRefused(f"not a valid URL: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in ("https", "http") or (scheme == "http" and not _setting("IDP_OUTBOUND_ALLOW_HTTP")):
        raise TargetRefused("only https URLs are allowed")
    if not parts.hostname:
        raise TargetRefused("the URL has no host")
    if parts.username or parts.password:
        raise TargetRefused("credentials in the URL are not allowed")
    return parts, scheme, port or (443 if scheme == "https" else 80)


_warned = set()  # targets allowed by configuration only, already logged


def check_host(host, port, what="connecting to", warn=True):
    """The one address policy: resolve ``host`` once and return its addresses, every one of them
    public or inside ``IDP_OUTBOUND_ALLOWED_NETWORKS``; else raise TargetRefused. HTTP calls
    (``prepare``), a realm's SMTP server (``realms.http.email``) and an LDAP provider's connection
    URLs (``federation.ldap.connection``) all pass here; ``what`` names the use in the warning
    logged (``warn``) when only configuration allows a non-public address."""
    try:
        addresses = resolve(host, port)
    except (socket.gaierror, UnicodeError, OSError) as exc:
        raise TargetRefused(f"cannot resolve {host}: {exc}") from None
    if not addresses:
        raise TargetRefused(f"{host} has no address")
    # Every answer must pass: a name answering both a public and a private address is refused.
    if not all(is_allowed(address) for address in addresses):
        raise TargetRefused(f"{host} resolves to a non-public address")
    for address in addresses if warn else ():
        if not is_public(address) and (what, host, address) not in _warned:
            # Once per target and process: a broker calls its provider on every sign-in.
            _warned.add((what, host, address))
            logger.warning("outbound: %s %s (%s) is allowed by configuration only", what, host, address)
    return addresses


def prepare(url):
    """Resolve and check; the returned Target is what ``request`` connects to."""
    parts, scheme, port = check_url(url)
    host = parts.hostname
    address = check_host(host, port, warn=False)[0]
    if (scheme == "http" or not is_public(address)) and (scheme, host, address) not in _warned:
        # Once per target and process: a broker calls its provider on every sign-in.
        _warned.add((scheme, host, address))
        logger.warning("outbound: calling %s://%s (%s) is allowed by configuration only", scheme, host, address)
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return Target(scheme, host, port, path, address)


def _new_pool(target, maxsize=1):
    common = {"maxsize": maxsize, "block": False, "retries": False}
    if target.scheme == "https":
        ctx = ssl.create_default_context(cafile=_setting("IDP_OUTBOUND_CA_BUNDLE") or None)
        # Connect to the checked IP; SNI and the certificate check use the name.
        return urllib3.HTTPSConnectionPool(target.address, target.port, ssl_context=ctx,
                                           server_hostname=target.host, assert_hostname=target.host, **common)
    return urllib3.HTTPConnectionPool(target.address, target.port, **common)


_pools = {}
_pools_lock = threading.Lock()


def _pool(target):
    key = (target.scheme, target.address, target.port, target.host, _setting("IDP_OUTBOUND_CA_BUNDLE"))
    pool = _pools.get(key)
    if pool is None:
        with _pools_lock:
            pool = _pools.get(key)
            if pool is None:
                pool = _pools[key] = _new_pool(target, maxsize=32)
    return pool


def _host_header(target):
    host = f"[{target.host}]" if ":" in target.host else target.host
    default = 443 if target.scheme == "https" else 80
    return host if target.port == default else f"{host}:{target.port}"


def _exchange(pool, method, target, body, headers, timeout, connect_timeout, body_limit):
    if not settings.IDP_TRACING_ENABLED:
        return _call(pool, method, target, body, headers, timeout, connect_timeout, body_limit)
    # Traced (idp.tracing): a client span per call, its context passed on as W3C traceparent.
    with trace.get_tracer("idp.outbound").start_as_current_span(method, kind=trace.SpanKind.CLIENT, attributes={
            "http.request.method": method, "server.address": target.host, "server.port": target.port}) as span:
        headers = {**(headers or {})}
        propagate.inject(headers)
        resp = _call(pool, method, target, body, headers, timeout, connect_timeout, body_limit)
        span.set_attribute("http.response.status_code", resp.status)
        return resp


def _call(pool, method, target, body, headers, timeout, connect_timeout, body_limit):
    started = time.monotonic()
    deadline = started + timeout
    hdrs = {"Host": _host_header(target), "User-Agent": USER_AGENT, **(headers or {})}
    resp = pool.urlopen(
        method, target.path, body=body, headers=hdrs, redirect=False, retries=False, assert_same_host=False,
        timeout=urllib3.Timeout(connect=min(timeout, connect_timeout or timeout), read=timeout),
        preload_content=False,
    )
    chunks, size, complete = [], 0, False
    try:
        while size < body_limit and time.monotonic() < deadline:
            chunk = resp.read(min(4096, body_limit - size))
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
    return Response(resp.status, dict(resp.headers), b"".join(chunks), int((time.monotonic() - started) * 1000))


def request(method, target, body=None, headers=None, *, timeout, connect_timeout=None, body_limit):
    """One request to a prepared target on a kept-alive connection: no redirects, no retries;
    reads at most ``body_limit`` bytes of the answer. Raises urllib3's ``HTTPError`` (timeouts,
    refused connections, TLS failures)."""
    return _exchange(_pool(target), method, target, body, headers, timeout, connect_timeout, body_limit)


def _one_shot(method, url, body, headers, timeout, connect_timeout, body_limit):
    target = prepare(url)
    pool = _new_pool(target)
    try:
        return _exchange(pool, method, target, body, headers, timeout, connect_timeout, body_limit)
    finally:
        pool.close()


def post(url, body, headers=None, *, timeout=5.0, connect_timeout=3.0, body_limit=1024):
    """POST once to a URL (a logout endpoint) on a connection of its own. Returns a Response;
    raises TargetRefused or ``HTTPError``."""
    return _one_shot("POST", url, body, headers, timeout, connect_timeout, body_limit)


def fetch(url, *, accept="*/*", timeout=5.0, connect_timeout=3.0, max_bytes=JSON_MAX_BYTES):
    """GET a document (an identity provider's metadata) once: its bytes; anything but a 200 with
    at most ``max_bytes`` raises OutboundError (TargetRefused when the URL may not be called)."""
    try:
        resp = _one_shot("GET", url, None, {"Accept": accept}, timeout, connect_timeout, max_bytes + 1)
    except HTTPError as exc:
        raise OutboundError(exc.__class__.__name__) from exc
    if resp.status != 200:
        raise OutboundError(f"HTTP {resp.status}")
    if len(resp.body) > max_bytes:
        raise OutboundError("document too large")
    return resp.body


def fetch_json(url, *, timeout=5.0, connect_timeout=3.0, max_bytes=JSON_MAX_BYTES):
    """GET a JSON document (a client's JWKS) once; anything but a 200 with at most ``max_bytes``
    of JSON raises OutboundError (TargetRefused when the URL may not be called)."""
    try:
        resp = _one_shot("GET", url, None, {"Accept": "application/json"}, timeout, connect_timeout, max_bytes + 1)
    except HTTPError as exc:
        raise OutboundError(exc.__class__.__name__) from exc
    if resp.status != 200:
        raise OutboundError(f"HTTP {resp.status}")
    if len(resp.body) > max_bytes:
        raise OutboundError("document too large")
    try:
        return json.loads(resp.body)
    except ValueError as exc:
        raise OutboundError("not JSON") from exc


__all__ = ["OutboundError", "TargetRefused", "HTTPError", "Target", "Response", "check_url", "is_public",
           "is_allowed", "check_host", "prepare", "request", "post", "fetch", "fetch_json", "resolve"]
