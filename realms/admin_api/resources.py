"""The registry of API resources: URL patterns relative to ``/admin/realms/``, added by each
app from its ``AppConfig.ready()`` and mounted by ``realms.admin_api.urls``."""
from django.urls import URLPattern
from django.urls.resolvers import RoutePattern

_patterns = []


class OneTrailingSlash(RoutePattern):
    """A ``path()`` route that also matches with one trailing slash, as Keycloak (Quarkus) does:
    its JavaScript admin client sends ``users/`` and the like for find and create since 26.7.
    Matched in place, not redirected, so a POST's body arrives; ``x//`` is still no match, and
    ``reverse`` still gives the route as written."""

    def match(self, path):
        return super().match(path.removesuffix("/"))


def register(*patterns):
    for p in patterns:
        if type(p.pattern) is not RoutePattern:
            raise TypeError(f"an Admin API resource is a path() route, not {p.pattern!r}")
        route = OneTrailingSlash(str(p.pattern), name=p.pattern.name, is_endpoint=True)
        _patterns.append(URLPattern(route, p.callback, p.default_args, p.name))


def patterns():
    return list(_patterns)
