"""Transport security for every request: which scheme the client used, and the realm's
``sslRequired`` (Keycloak's ``none`` / ``external`` / ``all``) on every ``/realms/<realm>/`` URL.

``TransportSecurityMiddleware`` comes first in the stack. It marks a request HTTPS only when
``realms.http.web.is_secure`` says so (TLS, or ``X-Forwarded-Proto`` from a trusted proxy), so
Django's ``request.is_secure()``, and with it HSTS, secure cookies and the CSRF referer check, can
no longer be talked into HTTPS by a header from anyone. Then a plain-HTTP request to a realm URL
is refused when the realm requires HTTPS for that client: ``all`` always, ``external`` unless the
client address is local in Keycloak's sense (any-local, loopback or site-local: 10/8, 172.16/12,
192.168/16, fec0::/10). Keycloak's answers: an "HTTPS required" page for browser endpoints, the
OAuth error JSON (403 ``invalid_request``) for the endpoints a protocol registers as JSON ones
(``register_json_endpoints`` from its ``AppConfig.ready``).
"""
import ipaddress
import re

from django.http import JsonResponse

from ..data.realm_cache import find_realm
from . import themes
from .messages import Message
from .web import client_address, is_secure

REALM_PATH = re.compile(r"^/realms/([^/]+)/")
MESSAGE = "HTTPS required"
_LOCAL_NETWORKS = tuple(ipaddress.ip_network(n) for n in (
    "0.0.0.0/32", "127.0.0.0/8", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16",
    "::/128", "::1/128", "fec0::/10"))
_json_endpoints = []


def register_json_endpoints(pattern):
    """Paths (a compiled regex over ``path_info``) whose refusal is an OAuth error JSON."""
    _json_endpoints.append(pattern)


def is_local(address) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    if ip.version == 6 and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return any(ip in net for net in _LOCAL_NETWORKS)


def https_required(ssl_required, address) -> bool:
    if ssl_required == "all":
        return True
    if ssl_required == "none":
        return False
    return not is_local(address)  # "external", and anything unknown: the safe reading


class TransportSecurityMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if is_secure(request):
            request.META["wsgi.url_scheme"] = "https"
            return self.get_response(request)
        match = REALM_PATH.match(request.path_info)
        if match is not None:
            config = find_realm(match.group(1))  # None: the view answers an unknown or disabled realm
            if config is not None and https_required(config.realm.ssl_required, client_address(request)):
                return self.refuse(request, config.realm)
        return self.get_response(request)

    @staticmethod
    def refuse(request, realm):
        if any(pattern.match(request.path_info) for pattern in _json_endpoints):
            return JsonResponse({"error": "invalid_request", "error_description": MESSAGE}, status=403)
        return themes.render(request, realm, "error.html", {"message": Message("httpsRequiredMessage")}, status=403)
