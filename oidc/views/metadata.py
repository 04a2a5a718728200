"""OAuth 2.0 Authorization Server Metadata (RFC 8414) of a realm, at both of its addresses.

Keycloak's own ``/realms/{realm}/.well-known/oauth-authorization-server`` (its
``oauth-authorization-server`` well-known provider) and RFC 8414 §3.1's path insertion,
``/.well-known/oauth-authorization-server/realms/{realm}``, the first address an MCP client tries
for an issuer with a path. Both answer what OpenID discovery answers (Keycloak's provider extends
the OpenID one), with the same CORS: any origin may read it.
"""
from django.http import JsonResponse
from django.urls import path

from ..services import discovery_document
from .discovery import public_document

WELL_KNOWN = ".well-known/oauth-authorization-server"


@public_document
def authorization_server_metadata(realm, issuer):
    return JsonResponse(discovery_document(realm, issuer))


urlpatterns = [
    path(WELL_KNOWN, authorization_server_metadata, name="oidc-oauth-authorization-server"),
]
