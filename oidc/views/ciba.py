"""CIBA endpoints (feature ``ciba``): the backchannel authentication endpoint (form POST by a
confidential client) and the authentication channel's callback (JSON POST with the channel's
bearer token). Paths as Keycloak's, relative to ``realms/<realm>/``."""
import functools
import json

from django.http import Http404, HttpResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from realms import features
from realms.http import cors
from realms.http.web import client_address

from .. import ciba
from ..errors import InvalidRequest, OAuthError, error_response
from .common import json_no_store, realm_context

METHODS = ["POST", "OPTIONS"]
BASE = "protocol/openid-connect/ext/ciba/auth"


def endpoint(view):
    """POST (CSRF-exempt: callers authenticate themselves), CORS preflight, 404 while the
    feature is off; OAuthErrors become their JSON answers."""
    @csrf_exempt
    @require_http_methods(METHODS)
    @functools.wraps(view)
    def wrapper(request, realm):
        if not features.enabled(ciba.FEATURE):
            raise Http404()
        if request.method == "OPTIONS":
            return cors.preflight(request, HttpResponse(), METHODS)
        realm_config, issuer = realm_context(request, realm)
        try:
            return view(request, realm_config, issuer)
        except OAuthError as exc:
            return error_response(exc)
    return wrapper


@endpoint
def authenticate(request, realm_config, issuer):
    body = ciba.backchannel_authentication(request, realm_config, issuer, request.POST, client_address(request))
    return json_no_store(body)


def _bearer(request):
    header = request.META.get("HTTP_AUTHORIZATION", "")
    if header[:7].lower() != "bearer ":
        return ""
    return header[7:].strip()


@endpoint
def callback(request, realm_config, issuer):
    bearer = _bearer(request)
    try:
        payload = json.loads(request.body or b"{}")
    except (ValueError, UnicodeDecodeError):
        payload = None
    if bearer and not isinstance(payload, dict):
        raise InvalidRequest("Invalid authentication status")
    status = payload.get("status") if isinstance(payload, dict) else None
    ciba.callback(realm_config, issuer, bearer, status, client_address(request))
    return HttpResponse(status=200)


urlpatterns = [
    path(BASE, authenticate, name="oidc-ciba-auth"),
    path(BASE + "/callback", callback, name="oidc-ciba-callback"),
]
