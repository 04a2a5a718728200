"""User info (OIDC Core §5.3): GET or POST with a bearer access token; JSON, or a signed or
encrypted JWT for a client that asks for one."""
from django.http import HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from realms.http import cors

from .. import dpop, services
from ..errors import OAuthError, error_response
from .common import NO_STORE, json_no_store, realm_context

METHODS = ["GET", "HEAD", "POST", "OPTIONS"]


@csrf_exempt
@require_http_methods(METHODS)
def userinfo(request, realm):
    if request.method == "OPTIONS":
        return cors.preflight(request, HttpResponse(), METHODS)
    realm_config, issuer = realm_context(request, realm)
    try:
        claims, config, jwt = services.userinfo(request, realm_config, issuer, request.POST)
    except OAuthError as exc:
        return dpop.with_nonce(request, error_response(exc))
    if jwt is None:
        response = json_no_store(claims)
    else:  # signed or encrypted, as the client's attributes ask (OIDC Core §5.3.2)
        response = HttpResponse(jwt, content_type="application/jwt")
        for name, value in NO_STORE.items():
            response[name] = value
    return dpop.with_nonce(request, cors.add(request, response, config.web_origins))
