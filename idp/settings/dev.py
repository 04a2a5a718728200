"""Development mode: embedded SQLite file, local-memory caches, background work in-process."""
import os

from .base import *  # noqa: F401,F403
from .base import SQLITE_OPTIONS, VAR_DIR

# Off unless asked for: a debug page shows settings and stack frames to anyone who can reach
# the port (dev mode may be bound to a non-loopback address).
DEBUG = os.environ.get("IDP_DEBUG", "0") == "1"
IDP_DEV_MODE = True
IDP_BASE_URL = os.environ.get("IDP_BASE_URL", "")  # empty: taken from each request

# Every manage.py command opens the SQLite file in the var directory, the first one included.
VAR_DIR.mkdir(parents=True, exist_ok=True)

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("IDP_DEV_DB", str(VAR_DIR / "dev.sqlite3")),
        "OPTIONS": SQLITE_OPTIONS,
    }
}
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    # Generations of each process's cached configuration (realms.data.shared_cache) must reach the
    # running server from manage.py commands (import_realm ...): files in the var directory,
    # replaced atomically, never expiring, read at most once a second per key.
    "generations": {
        "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
        "LOCATION": str(VAR_DIR / "cache" / "generations"),
        "TIMEOUT": None,
        "OPTIONS": {"MAX_ENTRIES": 100000},  # culling would forget generations
    },
}

# No broker in dev mode: Celery tasks run eagerly, webhooks use their in-process runner.
CELERY_BROKER_URL = "memory://"
CELERY_TASK_ALWAYS_EAGER = True
