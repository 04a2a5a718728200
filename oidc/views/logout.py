"""The end-session endpoint: ``/realms/<realm>/protocol/openid-connect/logout``."""
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from realms import themes

from ..logout import LogoutError, logout as end_session
from .common import realm_context


# Relying parties may POST the logout request from their own site (RP-Initiated Logout §2);
# the user's own confirmation carries a signed code bound to the session instead of a CSRF token.
@csrf_exempt
@require_http_methods(["GET", "POST"])
def logout(request, realm):
    realm_config, issuer = realm_context(request, realm)
    params = request.GET if request.method == "GET" else request.POST
    try:
        return end_session(request, realm_config, issuer, params)
    except LogoutError as exc:
        return themes.render(request, realm_config.realm, "error.html", {"message": exc.message}, status=400)
