"""Mounted at ``admin/realms/`` by ``idp/urls.py``: the registered resources, then a catch-all
so the whole prefix belongs to the API (401 or JSON 404, never the console's HTML)."""
from django.urls import re_path

from . import resources
from .views import NoRoute

urlpatterns = [*resources.patterns(), re_path(r"^.*$", NoRoute.as_view())]
