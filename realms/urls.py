"""Protocol-neutral sign-in pages, included from idp/urls.py at ``realms/<realm>/login-actions/``."""
from django.urls import path

from . import views

urlpatterns = [
    path("authenticate", views.authenticate, name="login-actions-authenticate"),
]
