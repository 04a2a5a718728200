"""Device authorization grant (RFC 8628) endpoints, feature ``device-flow``; paths as Keycloak's,
relative to ``realms/<realm>/``: the device authorization endpoint (form POST by the client,
CSRF-exempt, CORS), the user-code page (a page of the login theme, CSRF-protected) and its
result page. While the feature is off all three are 404."""
import functools

from django.http import Http404, HttpResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from realms import features
from realms.http import cors
from realms.http.web import client_address

from .. import device, device_verification
from ..errors import OAuthError, error_response
from ..realm_cache import get_realm
from .common import json_no_store, realm_context

METHODS = ["POST", "OPTIONS"]


def _feature(view):
    @functools.wraps(view)
    def wrapper(request, realm, *args, **kwargs):
        if not features.enabled(device.FEATURE):
            raise Http404()
        return view(request, realm, *args, **kwargs)
    return wrapper


@csrf_exempt
@require_http_methods(METHODS)
@_feature
def authorize_device(request, realm):
    if request.method == "OPTIONS":
        return cors.preflight(request, HttpResponse(), METHODS)
    realm_config, issuer = realm_context(request, realm)
    try:
        body, config = device.device_authorization(request, realm_config, issuer, request.POST, client_address(request))
    except OAuthError as exc:
        return cors.add(request, error_response(exc), None)
    response = json_no_store(body)
    response["Cache-Control"] = device.CACHE_CONTROL
    return cors.add(request, response, config.web_origins)


@require_http_methods(["GET", "POST"])
@_feature
def verify_user_code(request, realm):
    """GET: the form (``?user_code=`` fills it in); POST: the code, or ``cancel``."""
    realm_obj = get_realm(realm).realm
    if request.method == "GET":
        return device_verification.user_code_page(request, realm_obj, user_code=request.GET.get("user_code", ""))
    if "cancel" in request.POST:
        return device_verification.status_page(request, realm_obj, device_verification.ACCESS_DENIED)
    return device_verification.verify_user_code(
        request, realm, request.POST.get(device_verification.USER_CODE_PARAM) or request.POST.get("user_code", ""))


@require_http_methods(["GET"])
@_feature
def status(request, realm):
    return device_verification.status_page(request, get_realm(realm).realm, request.GET.get("error", "")[:32])


urlpatterns = [
    path("protocol/openid-connect/auth/device", authorize_device, name="oidc-device-auth"),
    path("device", verify_user_code, name="oidc-device"),
    path("device/status", status, name="oidc-device-status"),
]
