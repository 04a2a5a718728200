"""Discovery document and the realm's public keys (JWKS)."""
from django.http import HttpResponse, JsonResponse
from django.views.decorators.http import require_http_methods

from realms.keys import realm_keys

from .. import cors
from ..services import discovery_document
from .common import realm_context


@require_http_methods(["GET", "OPTIONS"])
def openid_configuration(request, realm):
    if request.method == "OPTIONS":
        return cors.preflight(request, HttpResponse(), ["GET", "OPTIONS"])
    realm_config, issuer = realm_context(request, realm)
    return cors.add(request, JsonResponse(discovery_document(realm_config.realm, issuer)), None, any_origin=True)


@require_http_methods(["GET", "OPTIONS"])
def certs(request, realm):
    if request.method == "OPTIONS":
        return cors.preflight(request, HttpResponse(), ["GET", "OPTIONS"])
    realm_config, _ = realm_context(request, realm)
    response = JsonResponse(realm_keys(realm_config.realm).jwks())
    response["Content-Type"] = "application/jwk-set+json"
    response["Cache-Control"] = "no-cache"
    # Public keys are public: any origin may read them.
    return cors.add(request, response, None, any_origin=True)
