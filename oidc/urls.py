"""OpenID Connect URLs, included from idp/urls.py at ``realms/<realm>/``."""
import re

from django.urls import path

from .registration import urls as registration
from .ssf import urls as ssf
from .views import authorize, ciba, device, discovery, logout, metadata, par, session_status, token, uma, userinfo

OIDC = "protocol/openid-connect/"
# The machine-to-machine ones (JSON; callers authenticate with their own credentials or a bearer
# token): the project's short path through the middleware (idp.middleware), and sslRequired
# refusals there are OAuth JSON (realms.http.transport).
PROTOCOL_ENDPOINTS = re.compile(
    r"^/realms/[^/]+/(?:protocol/openid-connect/(?:token|token/introspect|revoke|userinfo|certs|auth/device"
    r"|ext/ciba/auth|ext/ciba/auth/callback|ext/par/request)"
    r"|\.well-known/(?:openid-configuration|oauth-authorization-server|uma2-configuration|ssf-configuration)"
    r"|authz/protection/(?:resource_set(?:/[^/]+)?|permission(?:/ticket(?:/[^/]+)?)?)"
    r"|ssf/transmitter/(?:streams(?:/status)?|verify|subjects:(?:add|remove)|poll/[^/]+)"
    r"|clients-registrations/[^/]+(?:/[^/]+)?)$|^/realms/[^/]+$"
    r"|^/\.well-known/(?:oauth-authorization-server|ssf-configuration)/realms/[^/]+$")

urlpatterns = [
    path(OIDC + "auth", authorize.authorize, name="oidc-auth"),
    path(OIDC + "registrations", authorize.registrations, name="oidc-registrations"),
    path(OIDC + "logout", logout.logout, name="oidc-logout"),
    path(".well-known/openid-configuration", discovery.openid_configuration, name="oidc-discovery"),
    path(OIDC + "certs", discovery.certs, name="oidc-certs"),
    path(OIDC + "token", token.token, name="oidc-token"),
    path(OIDC + "token/introspect", token.introspect, name="oidc-introspect"),
    path(OIDC + "revoke", token.revoke, name="oidc-revoke"),
    path(OIDC + "ext/par/request", par.pushed_authorization_request, name="oidc-par"),
    path(OIDC + "userinfo", userinfo.userinfo, name="oidc-userinfo"),
    path(OIDC + "login-status-iframe.html", session_status.login_status_iframe, name="oidc-login-status-iframe"),
    path(OIDC + "login-status-iframe.html/init", session_status.login_status_iframe_init,
         name="oidc-login-status-iframe-init"),
    path(OIDC + "3p-cookies/step1.html", session_status.third_party_cookies_step1, name="oidc-3p-cookies-step1"),
    path(OIDC + "3p-cookies/step2.html", session_status.third_party_cookies_step2, name="oidc-3p-cookies-step2"),
    path(".well-known/uma2-configuration", uma.uma2_configuration, name="uma2-configuration"),
    path(uma.PROTECTION + "/resource_set", uma.resource_set, name="uma-resource-set"),
    path(uma.PROTECTION + "/resource_set/<str:resource_id>", uma.resource_set_detail, name="uma-resource-set-detail"),
    path(uma.PROTECTION + "/permission", uma.permission, name="uma-permission"),
    path(uma.PROTECTION + "/permission/ticket", uma.permission_ticket, name="uma-permission-ticket"),
    path(uma.PROTECTION + "/permission/ticket/<str:ticket_id>", uma.permission_ticket_detail,
         name="uma-permission-ticket-detail"),
    path(uma.PROTECTION + "/uma-policy", uma.uma_policies, name="uma-policies"),
    path(uma.PROTECTION + "/uma-policy/<str:object_id>", uma.uma_policy, name="uma-policy"),
    *device.urlpatterns,
    *ciba.urlpatterns,
    *metadata.urlpatterns,
    *registration.urlpatterns,
    *ssf.urlpatterns,
]
