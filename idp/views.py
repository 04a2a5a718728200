"""The pages no realm owns: the welcome page at ``/`` and the answers for an unknown address or
an unexpected error, themed for people and JSON where a program is asking (Keycloak's error
bodies on the Admin API and the protocol endpoints that answer JSON)."""
import logging
import re
import sys

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.http import JsonResponse
from django.views.decorators.http import require_GET
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from realms.http import messages, themes
from realms.models import Realm
from realms.representation.bootstrap import DEMO_REALM

logger = logging.getLogger("idp.errors")

# Addresses only programs call: the Admin REST API, a realm's JSON endpoints (discovery, keys,
# token, introspection, revocation, userinfo, device and PAR endpoints), the realm info.
_JSON_PATHS = re.compile(
    r"^/(?:admin/(?:realms|serverinfo)(?:/|$)"
    r"|realms/[^/]+/?$"
    r"|realms/[^/]+/\.well-known/"
    r"|realms/[^/]+/protocol/openid-connect/(?:token|revoke|userinfo|certs|ext/|auth/device|registrations))")


def wants_json(request):
    # Elsewhere, a caller that asks for JSON (as the Account REST API's do) gets it, as from Keycloak.
    return bool(_JSON_PATHS.match(request.path)) or "application/json" in request.META.get("HTTP_ACCEPT", "")


def _page(request, key, status):
    realm = None  # the default theme: the realm in the path may be the very thing not found
    text = messages.text(realm, messages.locale_for(request, realm), key)
    return themes.render(request, realm, "error.html", {"message": text}, status=status)


def not_found(request, exception=None):
    if wants_json(request):
        # Keycloak's bodies: an unknown realm is "Realm does not exist", anything else unmatched.
        detail = str(exception) if exception is not None and str(exception) == "Realm does not exist" else ""
        return JsonResponse({"error": detail or "HTTP 404 Not Found"}, status=404)
    return _page(request, "pageNotFound", 404)


# The database or Redis out of reach: an outage, not a fault in the request. Nothing that needs
# them is done without them (docs/operations/faults.md): the answer is 503 with Retry-After.
OUTAGES = (OperationalError, InterfaceError, RedisConnectionError, RedisTimeoutError)


def server_error(request):
    # The traceback is in the log (Django logs it when this returns); the answer tells nothing.
    if isinstance(sys.exc_info()[1], OUTAGES):  # called inside Django's except block
        answer = (JsonResponse({"error": "temporarily_unavailable",
                                "error_description": "For more on this error consult the server log."}, status=503)
                  if wants_json(request) else _page(request, "internalServerError", 503))
        answer["Retry-After"] = "5"
        return answer
    if wants_json(request):
        return JsonResponse({"error": "unknown_error",
                             "error_description": "For more on this error consult the server log."}, status=500)
    return _page(request, "internalServerError", 500)


@require_GET
def welcome(request):
    demo = getattr(settings, "IDP_DEV_MODE", False) and Realm.objects.filter(name=DEMO_REALM).exists()
    return themes.render(request, None, "welcome.html", {
        "console_url": "/admin/master/console/",
        "demo_sign_in_url": "/demo/" if demo else "",
        "demo_account_url": f"/realms/{DEMO_REALM}/account/" if demo else "",
    })
