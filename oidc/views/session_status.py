"""OpenID Connect Session Management 1.0 as keycloak-js uses it: the check-session iframe
(``login-status-iframe.html``), its ``init`` check and the third-party-cookie probe pages.

The pages are made to be framed by the realm's client applications, so they carry no
``X-Frame-Options`` and instead a CSP ``frame-ancestors`` listing the web origins of the realm's
enabled OpenID Connect clients (the page is loaded before any client is named). Which client may
ask about the session from which origin is decided by ``init``, per client, as Keycloak does.
"""
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.clickjacking import xframe_options_exempt
from django.views.decorators.http import require_safe

from realms.http.web import base_url
from realms.sso import sso_cookie

from ..realm_cache import get_realm


def _framable(request, realm_name, template, context=None):
    response = render(request, template, context or {})
    ancestors = " ".join(["'self'", *sorted(get_realm(realm_name).frame_ancestors())])
    response["Content-Security-Policy"] = f"frame-ancestors {ancestors}"
    return response


@require_safe
@never_cache
@xframe_options_exempt
def login_status_iframe(request, realm):
    return _framable(request, realm, "oidc/login-status-iframe.html",
                     {"cookie_name": sso_cookie.SESSION_STATE_COOKIE})


@require_safe
@never_cache
def login_status_iframe_init(request, realm):
    """204 when ``client_id`` names an enabled client whose web origins (or this server's own
    origin) include ``origin``; 403 otherwise, with nothing said about why."""
    realm_config = get_realm(realm)
    config = realm_config.client(request.GET.get("client_id", ""))
    if config is not None and config.client.enabled:
        origin = request.GET.get("origin", "")
        allowed = config.web_origins | {base_url(request)}
        if "*" in allowed or origin in allowed:
            return HttpResponse(status=204)
    return HttpResponse(status=403)


@require_safe
@never_cache
@xframe_options_exempt
def third_party_cookies_step1(request, realm):
    return _framable(request, realm, "oidc/3p-cookies/step1.html")


@require_safe
@never_cache
@xframe_options_exempt
def third_party_cookies_step2(request, realm):
    return _framable(request, realm, "oidc/3p-cookies/step2.html")
