"""User info (OIDC Core §5.3): GET or POST with a bearer access token."""
from django.http import HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from realms.http import cors

from .. import dpop, services
from ..errors import OAuthError, error_response
from .common import json_no_store, realm_context

METHODS = ["GET", "HEAD", "POST", "OPTIONS"]


@csrf_exempt
@require_http_methods(METHODS)
def userinfo(request, realm):
    if request.method == "OPTIONS":
        return cors.preflight(request, HttpResponse(), METHODS)
    realm_config, issuer = realm_context(request, realm)
    try:
        claims, config = services.userinfo(request, realm_config, issuer, request.POST)
    except OAuthError as exc:
        return dpop.with_nonce(request, error_response(exc))
    return dpop.with_nonce(request, cors.add(request, json_no_store(claims), config.web_origins))
