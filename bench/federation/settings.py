"""Benchmark settings: the test settings (PostgreSQL from IDP_TEST_DB_URL) with quiet logs."""
from idp.settings.test import *  # noqa: F401,F403
from idp.settings.test import DATABASES

DATABASES["default"]["CONN_MAX_AGE"] = 600
LOGGING = {"version": 1, "disable_existing_loggers": False, "root": {"level": "ERROR"}}
