"""Public URL map. Health and metrics are not here: they live on the management port only.

``/admin/realms/`` is the Admin REST API's (JSON only); the console lives at
``/admin/master/console/`` as Keycloak's does, so the two never overlap."""
from django.contrib import admin
from django.urls import include, path, re_path
from django.views.generic import RedirectView

from idp import views
from idp.lb_check import lb_check
from oidc import demo as oidc_demo
from oidc.ssf import views as ssf_views
from oidc.views import metadata as oauth_metadata
from oidc.views.discovery import realm_info
from realms.account.urls import account_root
from realms.admin import sign_in as console_sign_in
from realms.admin_api.openapi import OpenApi
from realms.admin_api.realms import Realms
from realms.admin_api.serverinfo import ServerInfo
from realms.urls import broker_urlpatterns
from webhooks import portal as webhook_portal

urlpatterns = [
    path("", views.welcome, name="welcome"),
    path("lb-check", lb_check),  # Keycloak's, with the feature stateless (docs/operations/two-sites.md)
    # One trailing slash is the same route, as on every Admin API route (realms.admin_api.resources).
    re_path(r"^admin/realms/?$", Realms.as_view()),
    path("admin/realms/", include("realms.admin_api.urls")),
    # Keycloak's JavaScript admin client asks for //admin/serverinfo (a base path "/" joined to
    # "/admin/serverinfo"); Keycloak answers it, so do we. (A group, not "^/?", which Django's
    # URL check reports as a needless leading slash.)
    re_path(r"^(?:/)?admin/serverinfo/?$", ServerInfo.as_view()),
    path("admin/openapi.json", OpenApi.as_view()),  # open, as Keycloak publishes its own
    # The console signs in through a realm's browser flow (docs/decisions/0063): these replace the
    # admin site's own login/ and logout/ (same paths, so routed first).
    path("admin/master/console/login/", console_sign_in.login),
    path("admin/master/console/logout/", console_sign_in.logout),
    path("admin/master/console/", admin.site.urls),
    path("admin/", RedirectView.as_view(pattern_name="admin:index")),
    path("realms/<str:realm>", realm_info, name="realm-info"),  # Keycloak's realm info, no slash
    # RFC 8414 §3.1: the realm's authorization server metadata with the well-known path inserted.
    path(".well-known/oauth-authorization-server/realms/<str:realm>", oauth_metadata.authorization_server_metadata),
    path(".well-known/ssf-configuration/realms/<str:realm>", ssf_views.configuration),  # RFC 8615 form, SSF 1.0 §7.2
    path("realms/<str:realm>/console-sign-in", console_sign_in.sign_in),
    path("realms/<str:realm>/scim/v2/", include("realms.scim.urls")),
    path("realms/<str:realm>/account/", include("realms.account.urls")),
    path("realms/<str:realm>/account", account_root),
    # <key>: the endpoint's id (the token in the fragment, then a cookie), or an old link's token.
    path("realms/<str:realm>/webhooks/portal/<str:key>/", webhook_portal.overview),
    path("realms/<str:realm>/webhooks/portal/<str:key>/session", webhook_portal.session),
    path("realms/<str:realm>/webhooks/portal/<str:key>/events/<str:message_id>", webhook_portal.event),
    path("realms/<str:realm>/", include("oidc.urls")),
    path("demo/api/whoami", oidc_demo.whoami, name="demo-whoami"),
    path("demo/", oidc_demo.sign_in, name="demo-sign-in"),
    path("demo/callback", oidc_demo.callback, name="demo-callback"),
    path("realms/<str:realm>/login-actions/", include("realms.urls")),
    path("realms/<str:realm>/broker/", include(broker_urlpatterns)),
    path("realms/<str:realm>/protocol/", include("saml.urls")),
]

handler404 = views.not_found
handler500 = views.server_error
