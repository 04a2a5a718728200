"""Protocol-neutral sign-in pages, included from idp/urls.py at ``realms/<realm>/login-actions/``."""
from django.urls import path

from .signin import views

urlpatterns = [
    path("authenticate", views.authenticate, name="login-actions-authenticate"),
    path("registration", views.registration, name="login-actions-registration"),
    path("reset-credentials", views.reset_credentials, name="login-actions-reset-credentials"),
    path("restart", views.restart, name="login-actions-restart"),
    path("action-token", views.action_token, name="login-actions-action-token"),
]
