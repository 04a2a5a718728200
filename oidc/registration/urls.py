from django.urls import path

from . import views

urlpatterns = [
    path("clients-registrations/<str:provider>", views.registrations, name="oidc-client-registration"),
    path("clients-registrations/<str:provider>/<str:client_id>", views.registrations,
         name="oidc-client-registration-client"),
]
