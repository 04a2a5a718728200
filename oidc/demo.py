"""A demo API protected by the resource-server helper: it answers who the bearer is.

The realm and audience come from IDP_DEMO_API_REALM (default ``demo``) and IDP_DEMO_API_AUDIENCE
(default ``demo-api``): a client's tokens reach it once the client has an audience mapper for
that audience. The token is validated locally against the realm's JWKS, fetched over HTTP like
any API would, so the server needs more than one worker (or thread) to answer its own fetch.
"""
import os

from django.http import JsonResponse
from django.views.decorators.http import require_GET

from .resource_server import require_bearer

REALM = os.environ.get("IDP_DEMO_API_REALM", "demo")
AUDIENCE = os.environ.get("IDP_DEMO_API_AUDIENCE", "demo-api")


@require_GET
@require_bearer(realm=REALM, audience=AUDIENCE)
def whoami(request):
    claims = request.token
    return JsonResponse({
        "sub": claims.get("sub"),
        "preferred_username": claims.get("preferred_username"),
        "client": claims.get("azp"),
        "scope": claims.get("scope", ""),
        "realm_roles": (claims.get("realm_access") or {}).get("roles", []),
    })
