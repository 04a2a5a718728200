"""The authorization endpoint: ``/realms/<realm>/protocol/openid-connect/auth``."""
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from realms.signin import flows

from ..authorize import AuthorizationFailure, error_answer, error_page, start_authorization
from ..realm_cache import get_realm


# OIDC Core §3.1.2.1 allows the request as a form POST from the client's site: a cross-site
# navigation by design, so Django's CSRF check does not apply (nothing is changed by it that a
# GET could not do).
@csrf_exempt
@require_http_methods(["GET", "POST"])
def authorize(request, realm, binding=flows.BROWSER):
    params = request.GET if request.method == "GET" else request.POST
    try:
        return start_authorization(request, realm, params, binding=binding)
    except AuthorizationFailure as exc:
        return error_answer(request, get_realm(realm).realm, exc)


@require_http_methods(["GET"])
def registrations(request, realm):
    """Keycloak's ``/protocol/openid-connect/registrations`` (keycloak-js ``register()``): an
    authorization request that opens on the registration page."""
    if not get_realm(realm).realm.registration_allowed:
        return error_page(request, get_realm(realm).realm, "Registration not allowed", status=403)
    return authorize(request, realm, binding=flows.REGISTRATION)
