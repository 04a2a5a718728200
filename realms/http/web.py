"""What a request tells every protocol: the public base URL, a realm's issuer URL and the
client's address. One definition each, so OIDC, SAML, the Admin API and events agree.

The client address is the TCP peer unless that peer is a trusted proxy
(``IDP_TRUSTED_PROXIES``, a list of addresses or networks); then ``X-Forwarded-For`` is read
from the right, skipping trusted hops, and the first untrusted address is the client. A header
from anyone else is ignored: an attacker cannot choose the address that brute-force counters,
events and audit rows record.
"""
import functools
import ipaddress
from urllib.parse import urlsplit

from django.conf import settings


def base_url(request=None) -> str:
    """``IDP_BASE_URL`` when configured (production always has it), else the request's own
    scheme and host (dev mode and tests; ``get_host`` has checked ``ALLOWED_HOSTS``). Without a
    request (a task, a back-channel call) and without the setting: "" (unknown)."""
    if settings.IDP_BASE_URL:
        return settings.IDP_BASE_URL.rstrip("/")
    if request is None:
        return ""
    return f"{request.scheme}://{request.get_host()}"


def realm_url(request, realm_name) -> str:
    """A realm's issuer URL: ``{base_url}/realms/{realm}``; "" when the base URL is unknown."""
    base = base_url(request)
    return f"{base}/realms/{realm_name}" if base else ""


@functools.lru_cache(maxsize=8)
def _networks(entries):
    return tuple(ipaddress.ip_network(entry.strip(), strict=False) for entry in entries if entry.strip())


def trusted_proxies():
    return _networks(tuple(getattr(settings, "IDP_TRUSTED_PROXIES", ()) or ()))


def _is_trusted(address, networks):
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in net for net in networks)


def from_trusted_proxy(request) -> bool:
    """Whether the TCP peer is one of ``IDP_TRUSTED_PROXIES``: only then are the headers a proxy
    sets (forwarded address and scheme, client certificate) believed."""
    networks = trusted_proxies()
    return bool(networks) and _is_trusted(request.META.get("REMOTE_ADDR", ""), networks)


def client_address(request) -> str:
    peer = request.META.get("REMOTE_ADDR", "")
    networks = trusted_proxies()
    if not networks or not _is_trusted(peer, networks):
        return peer
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
    for hop in reversed(hops):
        if not _is_trusted(hop, networks):
            try:
                return str(ipaddress.ip_address(hop))
            except ValueError:
                return peer  # a malformed hop: fall back to what the socket says
    return hops[0] if hops else peer


def is_cross_site(request) -> bool:
    """Whether the browser says another site started this request: ``Sec-Fetch-Site`` (sent by
    every current browser), else a ``Referer`` from another host. Neither (a non-browser client,
    a typed address): not cross-site."""
    site = request.META.get("HTTP_SEC_FETCH_SITE")
    if site is not None:
        return site not in ("same-origin", "none")
    referer = request.META.get("HTTP_REFERER", "")
    return bool(referer) and urlsplit(referer).netloc != request.get_host()


def is_secure(request) -> bool:
    """Whether the client reached the service over HTTPS: TLS on this connection, or
    ``X-Forwarded-Proto: https`` set by a trusted proxy (``IDP_TRUSTED_PROXIES``). The header
    from anyone else is ignored: a plain-HTTP client cannot claim HTTPS."""
    if request.META.get("wsgi.url_scheme") == "https":
        return True
    if not from_trusted_proxy(request):
        return False
    # The nearest proxy (ours, trusted) has the last word when several appended to the header.
    proto = request.META.get("HTTP_X_FORWARDED_PROTO", "").split(",")[-1].strip().lower()
    return proto == "https"
