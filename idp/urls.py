"""Public URL map. Health and metrics are not here: they live on the management port only."""
from django.contrib import admin
from django.urls import include, path

from oidc import demo as oidc_demo

urlpatterns = [
    path("", include("webhooks.urls")),  # before admin/: /admin/realms/<realm>/webhooks is REST
    path("admin/", admin.site.urls),
    path("realms/<str:realm>/", include("oidc.urls")),
    path("demo/api/whoami", oidc_demo.whoami, name="demo-whoami"),
    path("realms/<str:realm>/login-actions/", include("realms.urls")),
    path("realms/<str:realm>/protocol/", include("saml.urls")),
]
