"""Token, introspection and revocation endpoints (POST, form-encoded, client-authenticated)."""
import functools

from django.http import HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from realms.http import cors
from realms.http.web import client_address

from .. import dpop, services
from ..errors import InvalidRequest, OAuthError, error_response
from ..grants import Exchange, handle_token_request
from .common import json_no_store, realm_context

METHODS = ["POST", "OPTIONS"]
# RFC 8693 §2.1 lets ``audience`` and ``resource`` repeat in a token-exchange request, Keycloak's
# UMA grant ``permission``.
REPEATABLE = frozenset({"audience", "resource", "permission"})


def endpoint(view):
    """POST (CSRF-exempt: clients authenticate themselves) and CORS preflight; the view gets the
    realm's configuration and issuer."""
    @csrf_exempt
    @require_http_methods(METHODS)
    @functools.wraps(view)
    def wrapper(request, realm):
        if request.method == "OPTIONS":
            return cors.preflight(request, HttpResponse(), METHODS)
        realm_config, issuer = realm_context(request, realm)
        if any(len(values) > 1 and name not in REPEATABLE for name, values in request.POST.lists()):
            # RFC 6749 §3.2: parameters must not repeat; which copy a check reads is ambiguous.
            return error_response(InvalidRequest("duplicated parameter"))
        return view(request, realm_config, issuer)
    return wrapper


def _respond(request, produce):
    """Run ``produce() -> (body, client config)``; render its body or its OAuthError, with the
    CORS headers of the client when it is known."""
    holder = {}
    try:
        body, holder["config"] = produce(holder)
        response = json_no_store(body) if body is not None else HttpResponse(status=200)
    except OAuthError as exc:
        response = error_response(exc)
    config = holder.get("config")
    return cors.add(request, response, config.web_origins if config else None)


@endpoint
def token(request, realm_config, issuer):
    exchange = Exchange(realm_config=realm_config, issuer=issuer, params=request.POST,
                        ip_address=client_address(request))

    def produce(holder):
        try:
            return handle_token_request(request, exchange), exchange.client_config
        finally:
            holder["config"] = exchange.client_config

    return dpop.with_nonce(request, _respond(request, produce))


@endpoint
def introspect(request, realm_config, issuer):
    return _respond(request, lambda holder: services.introspect(
        request, realm_config, issuer, request.POST, client_address(request)))


@endpoint
def revoke(request, realm_config, issuer):
    return _respond(request, lambda holder: (None, services.revoke(
        request, realm_config, issuer, request.POST, client_address(request))))
