"""Turning IDP_* environment values into Django settings, and checking them before start-up.

A bad setting must stop the service with one line that names it, never with a traceback.
"""
from urllib.parse import parse_qsl, unquote, urlsplit

from .errors import IdpError


class ConfigError(IdpError):
    """Settings are missing or wrong; the message names each, one line each."""


def database_from_url(url):
    """postgres://user:pass@host:port/name?sslmode=... -> a DATABASES entry (psycopg 3). Several
    hosts (``host1:port1,host2:port2``) become libpq's lists: with ``target_session_attrs=read-write``
    a node connects to whichever is the primary, so it finds a promoted standby by itself."""
    if not url:
        return {"ENGINE": "idp.postgresql", "NAME": ""}
    try:
        parts = urlsplit(url)
    except ValueError as exc:  # an unreadable [IPv6] address
        raise ConfigError(f"IDP_DB_URL: {exc}") from None
    if parts.scheme not in ("postgres", "postgresql"):
        raise ConfigError(f"IDP_DB_URL: unsupported scheme {parts.scheme!r}, expected postgresql://")
    hosts, ports = [], []
    for item in parts.netloc.rpartition("@")[2].split(","):
        if item.startswith("["):  # [IPv6]:port
            host, _, port = item[1:].partition("]")
            port = port.removeprefix(":")
        else:
            host, _, port = item.partition(":")
        if port and not port.isdigit():
            raise ConfigError(f"IDP_DB_URL: port {port!r} is not a number")
        hosts.append(host)
        ports.append(port)
    options = dict(parse_qsl(parts.query))
    if len(hosts) > 1 and options.get("target_session_attrs") not in ("read-write", "primary"):
        raise ConfigError("IDP_DB_URL: several hosts need ?target_session_attrs=read-write, or a node may connect to a "
                          "read-only standby")
    return {
        "ENGINE": "idp.postgresql",  # Django's, its health check without a round trip
        "NAME": unquote(parts.path.lstrip("/")),
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": ",".join(hosts),
        "PORT": ",".join(ports) if any(ports) else "",
        "OPTIONS": options,
        "CONN_MAX_AGE": 300,
        "CONN_HEALTH_CHECKS": True,
        "SOCKET_TIMEOUT": env_number("IDP_DB_SOCKET_TIMEOUT", 30.0),  # idp.postgresql: a statement's answer
    }


def redis_cache(url):
    if not url:
        return {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}["default"]
    return {"BACKEND": "idp.cache.RedisCache", "LOCATION": url, "OPTIONS": redis_socket_options()}


def redis_socket_options():
    """Connecting to Redis and each command, for the cache and Celery's broker alike: a Redis
    whose route is lost fails the request (503) or the publish instead of holding it; 0 waits
    forever (``IDP_REDIS_SOCKET_TIMEOUT``)."""
    timeout = env_number("IDP_REDIS_SOCKET_TIMEOUT", 5.0) or None
    return {"socket_connect_timeout": timeout, "socket_timeout": timeout}


# Numbers operators set, read by the settings and by ``manage.py start``: an unreadable value
# falls back to the default there (a traceback is not a message) and is named by the check.
NUMBERS = {
    "IDP_HTTP_PORT": int, "IDP_MANAGEMENT_PORT": int, "IDP_WORKERS": int, "IDP_THREADS": int,
    "IDP_HEADER_READ_TIMEOUT": float, "IDP_BODY_READ_TIMEOUT": float, "IDP_HSTS_SECONDS": int,
    "IDP_PURGE_INTERVAL": float, "IDP_SHUTDOWN_DELAY": float, "IDP_SHUTDOWN_TIMEOUT": int,
    "IDP_TRACING_SAMPLER_RATIO": float, "IDP_CACHE_EMBEDDED_REALMS_MAX_COUNT": int,
    "IDP_DB_SOCKET_TIMEOUT": float, "IDP_REDIS_SOCKET_TIMEOUT": float,
}


def env_number(name, default):
    """``name``'s value as its kind in NUMBERS, or ``default`` when unset or unreadable."""
    import os

    raw = os.environ.get(name, "").strip()
    try:
        return NUMBERS[name](raw) if raw else default
    except ValueError:
        return default


def _setting_problems():
    """Every setting that is missing or unreadable, one line each (no connection attempted)."""
    import ipaddress
    import os

    from realms.features import FEATURES

    found = []
    required = {
        "IDP_HOSTNAME": "the public host name",
        "IDP_SECRET_KEY": "50+ random characters",
        "IDP_DB_URL": "postgresql://user:pass@host:port/db",
        "IDP_REDIS_URL": "redis://host:port/0",
    }
    for name, example in required.items():
        if not os.environ.get(name, "").strip():
            found.append(f"{name} is required in production mode ({example})")
    found += secret_key_problems()
    db_url = os.environ.get("IDP_DB_URL", "")
    if db_url:
        try:
            database_from_url(db_url)
        except ConfigError as exc:
            found.append(str(exc))
    redis_url = os.environ.get("IDP_REDIS_URL", "")
    if redis_url and urlsplit(redis_url).scheme not in ("redis", "rediss", "unix"):
        found.append(f"IDP_REDIS_URL: unsupported scheme {urlsplit(redis_url).scheme!r}, expected redis:// or rediss://")
    for name, kind in NUMBERS.items():
        raw = os.environ.get(name, "").strip()
        if raw:
            try:
                kind(raw)
            except ValueError:
                found.append(f"{name}: {raw!r} is not a {'whole number' if kind is int else 'number'}")
    if env_number("IDP_CACHE_EMBEDDED_REALMS_MAX_COUNT", 1) < 1:
        found.append("IDP_CACHE_EMBEDDED_REALMS_MAX_COUNT: at least 1 realm is kept per process")
    for entry in filter(None, (p.strip() for p in os.environ.get("IDP_TRUSTED_PROXIES", "").split(","))):
        try:
            ipaddress.ip_network(entry, strict=False)
        except ValueError:
            found.append(f"IDP_TRUSTED_PROXIES: {entry!r} is not an address or network")
    found += observability_problems()
    for name in ("IDP_FEATURES", "IDP_FEATURES_DISABLED"):
        unknown = sorted({n.strip() for n in os.environ.get(name, "").split(",") if n.strip()} - set(FEATURES))
        if unknown:
            found.append(f"{name}: unknown feature {', '.join(unknown)} (known: {', '.join(sorted(FEATURES))})")
    return found


SECRET_KEY_MIN_LENGTH = 50


def secret_key_problems():
    """IDP_SECRET_KEY and each of IDP_SECRET_KEY_FALLBACKS (Django's SECRET_KEY_FALLBACKS): long
    enough, a fallback neither empty nor the key itself. Keys are named by position, never shown."""
    import os

    found = []
    key = os.environ.get("IDP_SECRET_KEY", "")
    if key.strip() and len(key) < SECRET_KEY_MIN_LENGTH:
        found.append(f"IDP_SECRET_KEY: {len(key)} characters, at least {SECRET_KEY_MIN_LENGTH} are needed")
    raw = os.environ.get("IDP_SECRET_KEY_FALLBACKS", "")
    for position, fallback in enumerate((raw.split(",") if raw.strip() else []), 1):
        fallback = fallback.strip()
        if not fallback:
            found.append(f"IDP_SECRET_KEY_FALLBACKS: key {position} is empty")
        elif len(fallback) < SECRET_KEY_MIN_LENGTH:
            found.append(f"IDP_SECRET_KEY_FALLBACKS: key {position} has {len(fallback)} characters, at least "
                         f"{SECRET_KEY_MIN_LENGTH} are needed")
        elif fallback == key:
            found.append(f"IDP_SECRET_KEY_FALLBACKS: key {position} is IDP_SECRET_KEY itself (a fallback is an "
                         "earlier key)")
    return found


def observability_problems():
    """Tracing and log settings (idp/tracing.py, idp/logs.py): Keycloak's values, nothing else.
    Production checks them with the rest; dev mode (``start_dev``) on their own."""
    import os

    found = []
    enabled = os.environ.get("IDP_TRACING_ENABLED", "").strip().lower()
    if enabled not in ("", "true", "false"):
        found.append(f"IDP_TRACING_ENABLED: {enabled!r} is not true or false")
    endpoint = os.environ.get("IDP_TRACING_ENDPOINT", "").strip()
    if endpoint and (urlsplit(endpoint).scheme not in ("http", "https") or not urlsplit(endpoint).hostname):
        found.append(f"IDP_TRACING_ENDPOINT: {endpoint!r} is not an http:// or https:// URL (OTLP over HTTP)")
    ratio = env_number("IDP_TRACING_SAMPLER_RATIO", 1.0)
    if not 0.0 <= ratio <= 1.0:
        found.append(f"IDP_TRACING_SAMPLER_RATIO: {ratio} is not between 0 and 1")
    output = os.environ.get("IDP_LOG_CONSOLE_OUTPUT", "").strip().lower()
    if output not in ("", "default", "json"):
        found.append(f"IDP_LOG_CONSOLE_OUTPUT: {output!r} is not default or json")
    return found


def check_production(settings):
    """Raise ConfigError listing every missing or unusable production setting, one line each:
    first what can be seen in the environment, then whether the database and Redis answer."""
    import os

    found = _setting_problems()
    if not any(p.startswith("IDP_DB_URL") for p in found):
        from django.db import connection
        from django.db.utils import OperationalError

        try:
            connection.ensure_connection()
        except OperationalError as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else exc.__class__.__name__
            found.append(f"IDP_DB_URL: cannot connect to the database: {first}")
    if not any(p.startswith("IDP_REDIS_URL") for p in found):
        import redis

        try:
            redis.Redis.from_url(os.environ["IDP_REDIS_URL"], socket_connect_timeout=3).ping()
        except redis.RedisError as exc:
            found.append(f"IDP_REDIS_URL: cannot connect to Redis: {exc}")
    if found:
        raise ConfigError("\n".join(found))
