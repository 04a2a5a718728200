"""The feature ``stateless`` (two sites, decision 0094) beside the default: readiness checks the
site's Redis in both modes (it carries Celery either way), and SSO sessions are read and written
in their table once, with no copy in the database cache (decision 0109)."""
import json
import os
import subprocess
import sys

import pytest

from tests.idp.test_modes import base_env, free_port

READY = """
import django, json
django.setup()
from django.conf import settings
from idp.management_server import redis_ready
print(json.dumps([settings.CACHES["default"]["BACKEND"], redis_ready()]))
"""


@pytest.mark.parametrize("features, cache", [("", "idp.cache.RedisCache"), ("stateless", "idp.db_cache.DatabaseCache")])
def test_readiness_checks_the_sites_redis_in_both_modes(features, cache):
    """Production settings as a node builds them: Redis UP when it answers, DOWN when it does not."""
    def ready(redis_url):
        env = base_env(DJANGO_SETTINGS_MODULE="idp.settings.prod", IDP_FEATURES=features, IDP_REDIS_URL=redis_url,
                       IDP_DB_URL=os.environ.get("IDP_TEST_DB_URL", "postgresql://idp@127.0.0.1/idp"))
        done = subprocess.run([sys.executable, "-c", READY], env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    assert ready(os.environ["IDP_TEST_REDIS_URL"]) == [cache, [True, "UP"]]
    assert ready(f"redis://127.0.0.1:{free_port()}/0") == [cache, [False, "ConnectionError"]]
