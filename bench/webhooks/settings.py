"""Benchmark settings: the test settings (PostgreSQL from IDP_TEST_DB_URL, Redis broker from
IDP_TEST_REDIS_URL) plus the local receiver allowed over http on loopback."""
from idp.settings.test import *  # noqa: F401,F403
from idp.settings.test import DATABASES

DATABASES["default"]["CONN_MAX_AGE"] = 600
IDP_OUTBOUND_ALLOW_HTTP = True
IDP_OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]
LOGGING = {"version": 1, "disable_existing_loggers": False, "root": {"level": "ERROR"}}
