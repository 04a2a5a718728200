"""Settings of the Celery workers the end-to-end tests start: the test database pytest-django
created (its name comes from the test process), loopback receivers allowed over http, and a
retry schedule in seconds instead of hours so the suite stays fast."""
import os

from idp.settings.test import *  # noqa: F401,F403
from idp.settings.test import DATABASES

DATABASES["default"]["NAME"] = os.environ["IDP_WEBHOOK_TEST_DB_NAME"]
DATABASES["default"]["CONN_MAX_AGE"] = 0
IDP_OUTBOUND_ALLOW_HTTP = True
IDP_OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]
IDP_WEBHOOK_RETRY_SCHEDULE = [1, 1, 1, 1]
IDP_WEBHOOK_RETRY_JITTER = 0.0
IDP_WEBHOOK_SWEEP_INTERVAL = 0.5
IDP_WEBHOOK_REDISPATCH_AFTER = 3.0
IDP_WEBHOOK_TIMEOUT = 3.0
IDP_WEBHOOK_LEASE_MARGIN = 1.0
