"""A short path through the middleware stack for the machine-to-machine protocol endpoints.

Token, introspection, revocation, userinfo, JWKS, discovery and realm info are CSRF-exempt JSON endpoints:
clients authenticate with their own credentials or a bearer token, and nothing there reads a
Django session, ``request.user`` or messages, or answers with a page that could be framed. The
session, CSRF, authentication, messages and clickjacking middleware would only cost time on them
(the token endpoint is the hottest path of the service), so this middleware, placed right after
the security middleware (and WhiteNoise), checks the Host against ``ALLOWED_HOSTS`` (the one check
of CommonMiddleware that matters for security) and resolves and calls their views itself. Every
other URL, sign-in pages included, goes through the whole stack.
"""
import re

from django.urls import resolve

PROTOCOL_ENDPOINTS = re.compile(
    r"^/realms/[^/]+/(?:protocol/openid-connect/(?:token|token/introspect|revoke|userinfo|certs)"
    r"|\.well-known/openid-configuration)$|^/realms/[^/]+$")


class ProtocolEndpointMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not PROTOCOL_ENDPOINTS.match(request.path_info):
            return self.get_response(request)
        # CommonMiddleware is skipped, so check the Host against ALLOWED_HOSTS here: DisallowedHost
        # answers 400, as on every other URL.
        request.get_host()
        match = resolve(request.path_info)
        request.resolver_match = match
        response = match.func(request, *match.args, **match.kwargs)
        # CommonMiddleware's one effect that matters here: keep-alive needs a length.
        if not response.streaming and not response.has_header("Content-Length"):
            response["Content-Length"] = str(len(response.content))
        return response
