"""Test settings: a real PostgreSQL started by scripts/test.sh (IDP_TEST_DB_URL), or dev mode's SQLite
(IDP_TEST_DB=sqlite), on which scripts/test.sh runs the suite again."""
import os
import tempfile

from idp.config import database_from_url

from .base import *  # noqa: F401,F403
from .base import SQLITE_OPTIONS

DEBUG = False
IDP_BASE_URL = ""  # taken from each request (http://testserver in the test client)
ALLOWED_HOSTS = ["*"]

if os.environ.get("IDP_TEST_DB") == "sqlite":
    # Dev mode's database: a SQLite file with dev mode's options (WAL, writers queued), so
    # live-server threads and subprocesses meet it as a developer's server does.
    _file = os.path.join(os.environ.get("IDP_TEST_SQLITE_DIR") or tempfile.mkdtemp(prefix="idp-test-"), "test.sqlite3")
    DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": _file, "OPTIONS": SQLITE_OPTIONS,
                             "TEST": {"NAME": _file}}}
else:
    _url = os.environ.get("IDP_TEST_DB_URL", "")
    if not _url:
        raise SystemExit("IDP_TEST_DB_URL is not set: run the suite with scripts/test.sh")
    # Live-server threads must not keep connections open past a test (teardown drops the database).
    DATABASES = {"default": {**database_from_url(_url), "CONN_MAX_AGE": 0}}
# One process: the generations of realms.data.shared_cache share the default cache's store (local
# memory caches with the same LOCATION share their data).
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
          "generations": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# Real Redis for Celery tests (workers started by the tests themselves).
CELERY_BROKER_URL = os.environ.get("IDP_TEST_REDIS_URL", "")

# E-mail leaves from the request's own process (as in dev mode) for the SMTP server a test starts.
IDP_EMAIL_IN_PROCESS = True
# The console's import and export jobs too (realms.admin.jobs), as in dev mode.
IDP_JOBS_IN_PROCESS = True
