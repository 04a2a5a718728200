"""Protocol-neutral sign-in pages, included from idp/urls.py at ``realms/<realm>/login-actions/``,
and the broker's (``broker_urlpatterns``, at ``realms/<realm>/broker/``)."""
from django.urls import path

from .admin_api.broker_token import BrokerToken
from .brokering import broker
from .signin import views

urlpatterns = [
    path("authenticate", views.authenticate, name="login-actions-authenticate"),
    path("registration", views.registration, name="login-actions-registration"),
    path("reset-credentials", views.reset_credentials, name="login-actions-reset-credentials"),
    path("restart", views.restart, name="login-actions-restart"),
    path("action-token", views.action_token, name="login-actions-action-token"),
]

broker_urlpatterns = [
    path("<str:alias>/login", broker.login, name="broker-login"),
    path("<str:alias>/endpoint", broker.endpoint, name="broker-endpoint"),
    path("<str:alias>/endpoint/<path:rest>", broker.endpoint, name="broker-endpoint-rest"),
    path("<str:alias>/token", BrokerToken.as_view(), name="broker-token"),
]
