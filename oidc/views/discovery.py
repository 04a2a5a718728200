"""Discovery document, the realm's public keys (JWKS) and Keycloak's realm info."""
from django.http import HttpResponse, JsonResponse
from django.views.decorators.http import require_http_methods

from realms.data.keys import realm_keys
from realms.http import cors

from ..services import discovery_document
from ..services import realm_info as realm_info_document
from .common import realm_context

METHODS = ["GET", "HEAD", "OPTIONS"]


def public_document(view):
    """GET (and HEAD) of a public JSON document any origin may read, with its CORS preflight."""
    @require_http_methods(METHODS)
    def wrapper(request, realm):
        if request.method == "OPTIONS":
            return cors.preflight(request, HttpResponse(), METHODS)
        realm_config, issuer = realm_context(request, realm)
        return cors.add(request, view(realm_config.realm, issuer), None, any_origin=True)
    wrapper.__name__ = view.__name__
    return wrapper


@public_document
def openid_configuration(realm, issuer):
    return JsonResponse(discovery_document(realm, issuer))


@public_document
def certs(realm, issuer):
    response = JsonResponse(realm_keys(realm).jwks())  # application/json, as Keycloak sends it
    response["Cache-Control"] = "no-cache"
    return response


@public_document
def realm_info(realm, issuer):
    """``GET /realms/{realm}``: Keycloak's PublishedRealmRepresentation (python-keycloak's
    ``public_key()`` and adapters configured from it read it)."""
    return JsonResponse(realm_info_document(realm, issuer))
