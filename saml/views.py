"""SAML endpoints below ``/realms/<realm>/protocol/saml``. Views parse and hand over to one
service function; typed errors become responses here."""
from django.http import HttpResponse
from django.views.decorators.clickjacking import xframe_options_sameorigin
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods, require_safe

from realms.audit import events
from realms.data.realm_cache import get_realm
from realms.http import themes
from realms.http.web import client_address, realm_url

from . import constants as c
from . import inbound, logout, metadata, sso
from .errors import UntrustedRequest


def _refused(request, realm, exc, event_type):
    events.emit(realm, event_type, client_id=exc.client_id, ip_address=client_address(request),
                error=exc.event_error, details={"auth_method": c.PROTOCOL, "protocol": c.PROTOCOL,
                                                "reason": exc.message})
    return themes.render(request, realm, "error.html", {"message": exc.message}, status=400)


# SAML messages arrive as cross-site form posts from the SP (HTTP-POST binding): Django's CSRF
# check cannot apply; signatures, the registered ACS URL and replay records protect them.
@csrf_exempt
@require_http_methods(["GET", "POST"])
def endpoint(request, realm):
    """The one SSO and SLO endpoint for both bindings (Keycloak's layout)."""
    realm_obj = get_realm(realm).realm
    binding = c.BINDING_REDIRECT if request.method == "GET" else c.BINDING_POST
    params = request.GET if request.method == "GET" else request.POST
    event_type = "LOGIN_ERROR"
    try:
        url = sso.endpoint_url(request, realm)
        if "SAMLRequest" in params:
            message = inbound.read(request, realm_obj, binding=binding, params=params, param="SAMLRequest",
                                   endpoint_url=url, expected=("AuthnRequest", "LogoutRequest"))
            if message.kind == "AuthnRequest":
                return sso.start_sso(request, realm_obj, message)
            event_type = "LOGOUT_ERROR"
            return logout.handle_logout_request(request, realm_obj, message)
        if "SAMLResponse" in params:
            event_type = "LOGOUT_ERROR"
            message = inbound.read(request, realm_obj, binding=binding, params=params, param="SAMLResponse",
                                   endpoint_url=url, expected=("LogoutResponse",))
            return logout.handle_logout_response(request, realm_obj, message)
        raise UntrustedRequest("Missing parameter: SAMLRequest")
    except UntrustedRequest as exc:
        if exc.kind in ("LogoutRequest", "LogoutResponse"):
            event_type = "LOGOUT_ERROR"
        return _refused(request, realm_obj, exc, event_type)


@require_GET
def idp_initiated(request, realm, url_name):
    realm_obj = get_realm(realm).realm
    try:
        return sso.start_idp_initiated(request, realm_obj, url_name, request.GET.get("RelayState", ""))
    except UntrustedRequest as exc:
        return _refused(request, realm_obj, exc, "LOGIN_ERROR")


@xframe_options_sameorigin  # loaded in an iframe of our own logout page
@require_GET
def logout_step(request, realm):
    realm_obj = get_realm(realm).realm
    try:
        return logout.logout_step(request, realm_obj, request.GET.get("token", ""))
    except UntrustedRequest as exc:
        return _refused(request, realm_obj, exc, "LOGOUT_ERROR")


@require_safe  # GET and HEAD
def descriptor(request, realm):
    realm_obj = get_realm(realm).realm
    return HttpResponse(metadata.descriptor(realm_obj, realm_url(request, realm)),
                        content_type="application/samlmetadata+xml")
