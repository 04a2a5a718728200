"""Production mode: PostgreSQL and Redis are required; settings come from IDP_* variables.

Missing configuration does not raise here (a traceback is not a message); ``idp.config.check``
names the missing setting in one line when ``manage.py start`` runs.
"""
import os

from idp.config import ConfigError, database_from_url, env_number, redis_cache

from .base import *  # noqa: F401,F403

IDP_HOSTNAME = os.environ.get("IDP_HOSTNAME", "")
IDP_BASE_URL = os.environ.get("IDP_BASE_URL", f"https://{IDP_HOSTNAME}" if IDP_HOSTNAME else "")
ALLOWED_HOSTS = [IDP_HOSTNAME, "localhost", "127.0.0.1"] if IDP_HOSTNAME else ["localhost", "127.0.0.1"]
CSRF_TRUSTED_ORIGINS = [IDP_BASE_URL] if IDP_BASE_URL else []

try:
    DATABASES = {"default": database_from_url(os.environ.get("IDP_DB_URL", ""))}
except ConfigError:  # named by the check at start, with every other problem
    DATABASES = {"default": database_from_url("")}
IDP_REDIS_URL = os.environ.get("IDP_REDIS_URL", "")
CACHES = {
    "default": redis_cache(IDP_REDIS_URL),
    "generations": redis_cache(IDP_REDIS_URL),  # realms.data.shared_cache
}
# Keycloak's multi-cluster v2 (server feature ``stateless``): sites with a Redis each on one
# synchronously replicated PostgreSQL; what every node must see is cached in the database, on a
# connection of its own (idp.db_cache, decision 0094). Redis keeps each site's Celery queue.
if "stateless" in {n.strip() for n in IDP_FEATURES.split(",")} - {n.strip() for n in IDP_FEATURES_DISABLED.split(",")}:  # noqa: F405
    DATABASES["cache"] = dict(DATABASES["default"])
    CACHES["default"] = CACHES["generations"] = {
        "BACKEND": "idp.db_cache.DatabaseCache", "LOCATION": "idp_cache", "OPTIONS": {"DATABASE": "cache"}}

_after_security = MIDDLEWARE.index("django.middleware.security.SecurityMiddleware") + 1  # noqa: F405
MIDDLEWARE = [*MIDDLEWARE[:_after_security], "whitenoise.middleware.WhiteNoiseMiddleware",  # noqa: F405
              *MIDDLEWARE[_after_security:]]  # noqa: F405
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}

# No SECURE_PROXY_SSL_HEADER: X-Forwarded-Proto is believed from IDP_TRUSTED_PROXIES only
# (realms.http.transport.TransportSecurityMiddleware). HSTS on every HTTPS answer.
SECURE_HSTS_SECONDS = env_number("IDP_HSTS_SECONDS", 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = os.environ.get("IDP_HSTS_INCLUDE_SUBDOMAINS", "0") == "1"
SESSION_COOKIE_SECURE = IDP_BASE_URL.startswith("https://")
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
