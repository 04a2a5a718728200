"""Fetching a JSON document (a client's JWKS) from a URL a client registered, safely.

The URL comes from whoever can edit a client, so it must not reach into the service's own
network: the host is resolved once, every address must be public (loopback and private ranges
only when ``OIDC_ALLOW_PRIVATE_FETCH`` is on, which development mode implies), and the request
goes to that resolved address (TLS still verified against the host name), so a second DNS answer
cannot redirect it. No redirects, short timeouts, bounded size.
"""
import ipaddress
import socket
from urllib.parse import urlsplit

import requests
from django.conf import settings
from requests.adapters import HTTPAdapter

MAX_BYTES = 256 * 1024
TIMEOUT = (3, 5)


class FetchError(Exception):
    pass


def _allow_private():
    return getattr(settings, "OIDC_ALLOW_PRIVATE_FETCH", getattr(settings, "IDP_DEV_MODE", False))


class _PinnedHostAdapter(HTTPAdapter):
    """Connects to an IP address while verifying TLS (and SNI) for the original host name."""

    def __init__(self, hostname, **kwargs):
        self._hostname = hostname
        super().__init__(**kwargs)

    def init_poolmanager(self, *args, **kwargs):
        kwargs["server_hostname"] = self._hostname
        kwargs["assert_hostname"] = self._hostname
        super().init_poolmanager(*args, **kwargs)


def _resolve(host, port):
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise FetchError(f"cannot resolve {host}") from exc
    addresses = [ipaddress.ip_address(info[4][0]) for info in infos]
    if not addresses:
        raise FetchError(f"cannot resolve {host}")
    if not _allow_private() and not all(a.is_global for a in addresses):
        raise FetchError(f"{host} resolves to a non-public address")
    return addresses[0]


def fetch_json(url):
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise FetchError("unsupported URL")
    if parts.scheme == "http" and not _allow_private():
        raise FetchError("https required")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    address = _resolve(parts.hostname, port)
    host = f"[{address}]" if address.version == 6 else str(address)
    target = parts._replace(netloc=f"{host}:{port}").geturl()
    session = requests.Session()
    session.trust_env = False  # never via an environment proxy
    session.mount("https://", _PinnedHostAdapter(parts.hostname))
    headers = {"Host": parts.netloc.rsplit("@", 1)[-1], "Accept": "application/json"}
    try:
        with session.get(target, headers=headers, timeout=TIMEOUT, allow_redirects=False, stream=True) as resp:
            if resp.status_code != 200:
                raise FetchError(f"HTTP {resp.status_code}")
            body = resp.raw.read(MAX_BYTES + 1, decode_content=True)
    except requests.RequestException as exc:
        raise FetchError(str(exc.__class__.__name__)) from exc
    if len(body) > MAX_BYTES:
        raise FetchError("document too large")
    try:
        import json

        return json.loads(body)
    except ValueError as exc:
        raise FetchError("not JSON") from exc


def post(url, *, timeout=TIMEOUT, headers=None, **kwargs):
    """POST to a URL a client registered (a logout endpoint), under the rules of ``fetch_json``:
    resolved once, public addresses only unless allowed, connected to the checked address, no
    redirects, no environment proxy. Returns the response; raises FetchError or a requests
    exception."""
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise FetchError("unsupported URL")
    if parts.scheme == "http" and not _allow_private():
        raise FetchError("https required")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    address = _resolve(parts.hostname, port)
    host = f"[{address}]" if address.version == 6 else str(address)
    target = parts._replace(netloc=f"{host}:{port}").geturl()
    with requests.Session() as http:
        http.trust_env = False
        http.mount("https://", _PinnedHostAdapter(parts.hostname))
        return http.post(target, timeout=timeout, allow_redirects=False,
                         headers={**(headers or {}), "Host": parts.netloc.rsplit("@", 1)[-1]}, **kwargs)
