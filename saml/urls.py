"""SAML URLs, included from idp/urls.py at ``realms/<realm>/protocol/``."""
from django.urls import path

from . import views

urlpatterns = [
    path("saml", views.endpoint, name="saml-endpoint"),
    path("saml/descriptor", views.descriptor, name="saml-descriptor"),
    path("saml/clients/<str:url_name>", views.idp_initiated, name="saml-idp-initiated"),
    path("saml/logout-step", views.logout_step, name="saml-logout-step"),
]
