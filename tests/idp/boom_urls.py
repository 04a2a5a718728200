"""The project's URLs plus views that fail, for the error-page tests."""
from django.urls import path

from idp.urls import handler404, handler500  # noqa: F401 (the handlers are read from here)
from idp.urls import urlpatterns as project_urls


def boom(request, **kwargs):
    raise RuntimeError("a bug")


urlpatterns = [path("boom", boom), path("admin/realms/boom", boom), *project_urls]
