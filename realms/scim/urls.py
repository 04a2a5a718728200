"""Below ``/realms/<realm>/scim/v2/``."""
from django.urls import path, re_path

from . import views

urlpatterns = [
    path("ServiceProviderConfig", views.ServiceProviderConfig.as_view()),
    path("Schemas", views.Schemas.as_view()),
    path("Schemas/<str:urn>", views.Schemas.as_view()),
    path("ResourceTypes", views.ResourceTypes.as_view()),
    path("ResourceTypes/<str:name>", views.ResourceTypes.as_view()),
    re_path(r"^(?P<endpoint>Users|Groups)$", views.Collection.as_view()),
    re_path(r"^(?P<endpoint>Users|Groups)/\.search$", views.Collection.as_view(), {"search": True}),
    re_path(r"^(?P<endpoint>Users|Groups)/(?P<id>[^/]+)$", views.Item.as_view()),
    path(".search", views.RootSearch.as_view()),
    re_path(r"^.*$", views.NoRoute.as_view()),
]
