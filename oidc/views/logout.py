"""The end-session endpoint: ``/realms/<realm>/protocol/openid-connect/logout``."""
from django.http import HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from realms.http import cors, themes
from realms.http.web import client_address

from ..errors import OAuthError, error_response
from ..logout import LogoutError, logout_by_refresh_token
from ..logout import logout as end_session
from .common import realm_context


# Relying parties may POST the logout request from their own site (RP-Initiated Logout §2);
# the user's own confirmation carries a signed code bound to the session instead of a CSRF token.
# A POST with ``refresh_token`` is Keycloak's API logout (client-authenticated, JSON errors).
@csrf_exempt
@require_http_methods(["GET", "POST", "OPTIONS"])  # no HEAD: a GET with a hint ends the session
def logout(request, realm):
    if request.method == "OPTIONS":
        return cors.preflight(request, HttpResponse(), ["POST", "OPTIONS"])
    realm_config, issuer = realm_context(request, realm)
    if request.method == "POST" and "refresh_token" in request.POST:
        return _logout_by_refresh_token(request, realm_config, issuer)
    params = request.POST if request.method == "POST" else request.GET
    try:
        return end_session(request, realm_config, issuer, params)
    except LogoutError as exc:
        return themes.render(request, realm_config.realm, "error.html", {"message": exc.message}, status=400)


def _logout_by_refresh_token(request, realm_config, issuer):
    found = {}
    try:
        logout_by_refresh_token(request, realm_config, issuer, request.POST, client_address(request), found)
        response = HttpResponse(status=204)
    except OAuthError as exc:
        response = error_response(exc)
    config = found.get("config")
    return cors.add(request, response, config.web_origins if config else None)
