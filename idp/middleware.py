"""A short path through the middleware stack for the JSON endpoints machines call.

The OpenID Connect protocol endpoints (token, introspection, revocation, userinfo, JWKS,
discovery and realm info: ``oidc.urls.PROTOCOL_ENDPOINTS``) and the Admin REST API are
CSRF-exempt JSON endpoints: callers authenticate with their own credentials or a bearer token,
and nothing there reads a Django session, ``request.user`` or messages, or answers with a page
that could be framed. The session, CSRF, authentication, messages and clickjacking middleware
would only cost time on them (the token endpoint is the hottest path of the service, and every
Admin API request pays them too), so this middleware, placed right after the security middleware
(and WhiteNoise), checks the Host against ``ALLOWED_HOSTS`` (the one check of CommonMiddleware
that matters for security) and resolves and calls their views itself. Every other URL, sign-in
pages and the console included, goes through the whole stack.
"""
import re

from django.urls import resolve

from oidc.urls import PROTOCOL_ENDPOINTS

ADMIN_API = r"^/admin/realms(?:/|$)"  # mounted in idp/urls.py; the console is elsewhere
# One pattern: every request of the service is matched against it.
SHORT_PATHS = re.compile(f"{PROTOCOL_ENDPOINTS.pattern}|{ADMIN_API}")


class ShortPathMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not SHORT_PATHS.match(request.path_info):
            return self.get_response(request)
        # CommonMiddleware is skipped, so check the Host against ALLOWED_HOSTS here: DisallowedHost
        # answers 400, as on every other URL.
        request.get_host()
        match = resolve(request.path_info)
        request.resolver_match = match
        response = match.func(request, *match.args, **match.kwargs)
        if callable(getattr(response, "render", None)):  # the API's (DRF's) answers render late
            response = response.render()
        # CommonMiddleware's one effect that matters here: keep-alive needs a length.
        if not response.streaming and not response.has_header("Content-Length"):
            response["Content-Length"] = str(len(response.content))
        return response
