"""The transmitter's URLs below ``realms/<realm>/`` (included from oidc/urls.py)."""
from django.urls import path

from . import views

T = "ssf/transmitter/"

urlpatterns = [
    path(".well-known/ssf-configuration", views.configuration, name="ssf-configuration"),
    path(T + "streams", views.stream_config, name="ssf-streams"),
    path(T + "streams/status", views.stream_status, name="ssf-stream-status"),
    path(T + "verify", views.verify, name="ssf-verify"),
    path(T + "subjects:add", views.add_subject, name="ssf-subjects-add"),
    path(T + "subjects:remove", views.remove_subject, name="ssf-subjects-remove"),
    path(T + "poll/<str:stream_id>", views.poll, name="ssf-poll"),
]
