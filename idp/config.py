"""Turning IDP_* environment values into Django settings, and checking them before start-up.

A bad setting must stop the service with one line that names it, never with a traceback.
"""
from urllib.parse import parse_qsl, unquote, urlsplit


class ConfigError(Exception):
    """A setting is missing or wrong; the message names it."""


def database_from_url(url):
    """postgres://user:pass@host:port/name?sslmode=... -> a DATABASES entry (psycopg 3)."""
    if not url:
        return {"ENGINE": "django.db.backends.postgresql", "NAME": ""}
    parts = urlsplit(url)
    if parts.scheme not in ("postgres", "postgresql"):
        raise ConfigError(f"IDP_DB_URL: unsupported scheme {parts.scheme!r}, expected postgresql://")
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": unquote(parts.path.lstrip("/")),
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": parts.hostname or "",
        "PORT": str(parts.port or ""),
        "OPTIONS": dict(parse_qsl(parts.query)),
        "CONN_MAX_AGE": 300,
        "CONN_HEALTH_CHECKS": True,
    }


def redis_cache(url):
    if not url:
        return {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}["default"]
    return {"BACKEND": "idp.cache.RedisCache", "LOCATION": url}


def check_production(settings):
    """Raise ConfigError naming the first missing or unusable production setting."""
    import os

    if not getattr(settings, "IDP_HOSTNAME", ""):
        raise ConfigError("IDP_HOSTNAME is required in production mode (the public host name)")
    if not os.environ.get("IDP_SECRET_KEY"):
        raise ConfigError("IDP_SECRET_KEY is required in production mode (50+ random characters)")
    if not os.environ.get("IDP_DB_URL"):
        raise ConfigError("IDP_DB_URL is required in production mode (postgresql://user:pass@host:port/db)")
    if not os.environ.get("IDP_REDIS_URL"):
        raise ConfigError("IDP_REDIS_URL is required in production mode (redis://host:port/0)")
    from django.db import connection
    from django.db.utils import OperationalError

    try:
        connection.ensure_connection()
    except OperationalError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else exc.__class__.__name__
        raise ConfigError(f"IDP_DB_URL: cannot connect to the database: {first}") from None
    import redis

    try:
        redis.Redis.from_url(os.environ["IDP_REDIS_URL"], socket_connect_timeout=3).ping()
    except redis.RedisError as exc:
        raise ConfigError(f"IDP_REDIS_URL: cannot connect to Redis: {exc}") from None
