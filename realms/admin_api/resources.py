"""The registry of API resources: URL patterns relative to ``/admin/realms/``, added by each
app from its ``AppConfig.ready()`` and mounted by ``realms.admin_api.urls``."""
_patterns = []


def register(*patterns):
    _patterns.extend(patterns)


def patterns():
    return list(_patterns)
