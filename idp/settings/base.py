"""Settings shared by every mode. Mode modules (dev, prod, test) import this and override.

Everything an operator sets comes from environment variables prefixed ``IDP_``.
"""
import os
from pathlib import Path

from idp.config import env_number, redis_socket_options

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = Path(os.environ.get("IDP_VAR_DIR", BASE_DIR / "var"))

# Dev and test get a fixed key; production refuses to start without IDP_SECRET_KEY (see prod.py).
SECRET_KEY = os.environ.get("IDP_SECRET_KEY", "dev-only-insecure-key-change-me-0123456789abcdef")
# Earlier keys, comma-separated: what they signed or sealed is still accepted, new values use
# SECRET_KEY (rotation: docs/operations/secret-key.md, `manage.py rotate_secret_key`).
SECRET_KEY_FALLBACKS = [k.strip() for k in os.environ.get("IDP_SECRET_KEY_FALLBACKS", "").split(",") if k.strip()]
DEBUG = False
ALLOWED_HOSTS = ["localhost", "127.0.0.1", "[::1]"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "idp.apps.IdpConfig",
    "realms",
    "oidc",
    "saml",
    "webhooks",
    "federation",
    "django_celery_beat",
    "ambassador.apps.AmbassadorConfig",
]

MIDDLEWARE = [
    "idp.metrics.RequestMetricsMiddleware",  # times every answer, the refusals below included
    "idp.tracing.TracingMiddleware",  # a span per request (removes itself unless IDP_TRACING_ENABLED)
    "idp.logs.RequestContextMiddleware",  # request id for JSON logs (removes itself otherwise)
    # Then: a NUL in the path or input reaches no database look-up (the realm's sslRequired below).
    "realms.http.input_guard.NulGuardMiddleware",
    "realms.http.transport.TransportSecurityMiddleware",  # HTTPS as trusted proxies tell; realm sslRequired
    "django.middleware.security.SecurityMiddleware",
    "idp.middleware.ShortPathMiddleware",  # token, JWKS, userinfo, the Admin API: skip the rest
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "idp.management_server.PublicPortGuardMiddleware",
]

ROOT_URLCONF = "idp.urls"
WSGI_APPLICATION = "idp.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

AUTH_USER_MODEL = "realms.User"
# The console's Django session: its user signed in through a realm's flow; no password back end.
AUTHENTICATION_BACKENDS = ["realms.administration.console_auth.ConsoleBackend"]
SILENCED_SYSTEM_CHECKS = ["auth.W004"]  # username is unique per realm, not globally (by design)

# Argon2id first (new hashes), then the formats a Keycloak import may bring; Django upgrades a
# password to the first hasher at the next successful sign-in.
PASSWORD_HASHERS = [
    "realms.credentials.hashers.Argon2idHasher",
    "realms.credentials.hashers.KeycloakArgon2Hasher",
    "realms.credentials.hashers.KeycloakPbkdf2Sha256Hasher",
    "realms.credentials.hashers.KeycloakPbkdf2Sha512Hasher",
    "realms.credentials.hashers.KeycloakPbkdf2Sha1Hasher",
]

LANGUAGE_CODE = "en"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
X_FRAME_OPTIONS = "DENY"
# The largest request body: Keycloak's default (10 MB) rather than Django's 2.5 MiB, so a realm
# representation that Keycloak's Admin API takes is taken here too; production's server refuses a
# larger body with 413 before a thread reads it (idp/buffered_wsgi.py).
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
# Messages may carry a secret shown once (a regenerated client secret): keep them server-side.
MESSAGE_STORAGE = "django.contrib.messages.storage.session.SessionStorage"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "UNAUTHENTICATED_USER": None,
}

# --- Product settings -------------------------------------------------------------------------
# Public base URL ({base_url} of the spec); issuers are {base_url}/realms/<realm>.
IDP_BASE_URL = os.environ.get("IDP_BASE_URL", "")
# Addresses or networks of the reverse proxies in front of the service (comma-separated); only
# their X-Forwarded-For is believed (realms.http.web.client_address). Empty: the TCP peer is the client.
IDP_TRUSTED_PROXIES = [p for p in os.environ.get("IDP_TRUSTED_PROXIES", "").split(",") if p.strip()]
# The request header in which the TLS terminating proxy passes the client certificate (mutual TLS,
# oidc.mtls), e.g. ssl-client-cert (nginx $ssl_client_escaped_cert) or x-forwarded-client-cert
# (Envoy); believed from IDP_TRUSTED_PROXIES only. Empty: no client certificates.
IDP_CLIENT_CERT_HEADER = os.environ.get("IDP_CLIENT_CERT_HEADER", "").strip()
IDP_MANAGEMENT_PORT = env_number("IDP_MANAGEMENT_PORT", 9000)
# The realms whose configuration and keys each process keeps, least recently used dropped first
# (Keycloak's cache-embedded-realms-max-count, counted in realms; decision 0107).
IDP_CACHE_EMBEDDED_REALMS_MAX_COUNT = env_number("IDP_CACHE_EMBEDDED_REALMS_MAX_COUNT", 100)
IDP_BOOTSTRAP_ADMIN_USERNAME = os.environ.get("IDP_BOOTSTRAP_ADMIN_USERNAME", "")
IDP_BOOTSTRAP_ADMIN_PASSWORD = os.environ.get("IDP_BOOTSTRAP_ADMIN_PASSWORD", "")
# Where passwordBlacklist(<file name>) policies find their files (one password a line); the realm
# names a file in it, never a path. Unset: realms cannot use passwordBlacklist.
IDP_PASSWORD_BLACKLISTS_DIR = os.environ.get("IDP_PASSWORD_BLACKLISTS_DIR", "")
IDP_DEV_MODE = False
# Keycloak's --features / --features-disabled (realms.features): comma-separated feature names.
IDP_FEATURES = os.environ.get("IDP_FEATURES", "")
IDP_FEATURES_DISABLED = os.environ.get("IDP_FEATURES_DISABLED", "")
# CIBA's authentication channel (Keycloak's ciba-http-auth-channel provider): the URL the server
# POSTs each backchannel authentication request to. Unset: CIBA requests answer 503.
IDP_CIBA_HTTP_AUTH_CHANNEL_URI = os.environ.get("IDP_CIBA_HTTP_AUTH_CHANNEL_URI", "")

# OpenTelemetry traces (idp/tracing.py), as Keycloak's tracing-enabled, tracing-endpoint (OTLP over
# HTTP; unset: the standard OTEL_EXPORTER_OTLP_* variables) and tracing-sampler-ratio.
IDP_TRACING_ENABLED = os.environ.get("IDP_TRACING_ENABLED", "false").strip().lower() == "true"
IDP_TRACING_ENDPOINT = os.environ.get("IDP_TRACING_ENDPOINT", "").strip()
IDP_TRACING_SAMPLER_RATIO = env_number("IDP_TRACING_SAMPLER_RATIO", 1.0)
# Keycloak's log-console-output: default (plain lines) or json (one object a line, idp/logs.py).
IDP_LOG_CONSOLE_OUTPUT = os.environ.get("IDP_LOG_CONSOLE_OUTPUT", "default").strip().lower()

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
                   "json": {"()": "idp.logs.JsonFormatter"}},
    # Query strings carry id_token_hint, login hints and codes: logged with their values redacted.
    "filters": {"redact_query": {"()": "idp.logs.RedactQueryFilter"}},
    "handlers": {"console": {"class": "logging.StreamHandler",
                             "formatter": "json" if IDP_LOG_CONSOLE_OUTPUT == "json" else "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("IDP_LOG_LEVEL", "INFO")},
    "loggers": {"django.request": {"level": "ERROR"}, "django.server": {"filters": ["redact_query"]},
                # fido2 logs every ceremony at INFO; ours (idp.webauthn) logs the refusals.
                "fido2": {"level": "WARNING"}},
}

# The site's Redis, checked by readiness: production's (prod.py); dev mode and the suite have none.
IDP_REDIS_URL = ""
# Celery (idp/celery.py): Redis broker in production; dev mode runs background work in-process.
CELERY_BROKER_URL = os.environ.get("IDP_REDIS_URL", "")
# kombu's own waits have no limit: a publish to a broker cut by a partition would hold the request
# that queued it (decision 0108).
CELERY_BROKER_TRANSPORT_OPTIONS = redis_socket_options()
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_TASK_IGNORE_RESULT = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Periodic tasks from django-celery-beat's tables (each LDAP provider's sync periods live there).
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"

# Dev mode's SQLite (and the suite's second run). IMMEDIATE: a transaction takes SQLite's write
# lock when it begins, so concurrent writers (requests, the in-process webhook runner) queue on the
# busy timeout instead of failing with "database is locked" when a reading transaction tries to
# start writing.
SQLITE_OPTIONS = {"timeout": 20, "init_command": "PRAGMA journal_mode=WAL;", "transaction_mode": "IMMEDIATE"}
