"""The loaded-key cache is per process; a rotation made by one process (one Granian worker) must
reach the others through the shared cache (Redis in production) within a second, while the old
key keeps verifying."""
import os
import subprocess
import sys
import uuid

from django.conf import settings as django_settings
from django.db import connection

from idp.config import redis_cache
from realms.data.keys import realm_keys, rotate_key
from realms.data.shared_cache import CHECK_SECONDS
from realms.representation.services import create_realm

# Another worker: the same database and Redis, its own memory. It prints the signing kid it has
# cached, waits for the go, then polls (as a busy worker would) until it signs with another key.
WORKER = """
import os, sys, time
os.environ["DJANGO_SETTINGS_MODULE"] = "idp.settings.test"
import django
from django.conf import settings
settings.DATABASES["default"]["NAME"] = sys.argv[1]
from idp.config import redis_cache
settings.CACHES = {"default": redis_cache(sys.argv[2]), "generations": redis_cache(sys.argv[2])}
django.setup()
from realms.data.keys import realm_keys
from realms.models import Realm
realm = Realm.objects.get(name=sys.argv[3])
first = realm_keys(realm).signer("RS256")[0]
print(first, flush=True)
sys.stdin.readline()
started = time.monotonic()
kid = first
while kid == first and time.monotonic() - started < 10:
    time.sleep(0.02)
    kid = realm_keys(realm).signer("RS256")[0]
print(kid, first in realm_keys(realm).by_kid, round(time.monotonic() - started, 2), flush=True)
"""


def test_rotation_in_one_process_reaches_another(transactional_db, settings):
    redis_url = os.environ["IDP_TEST_REDIS_URL"]
    settings.CACHES = {"default": redis_cache(redis_url), "generations": redis_cache(redis_url)}  # production's
    realm = create_realm("k" + uuid.uuid4().hex[:10])
    worker = subprocess.Popen(
        [sys.executable, "-c", WORKER, connection.settings_dict["NAME"], redis_url, realm.name],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=django_settings.BASE_DIR)
    try:
        old_kid = worker.stdout.readline().strip()
        assert old_kid == realm_keys(realm).signer("RS256")[0]
        new = rotate_key(realm)
        assert realm_keys(realm).signer("RS256")[0] == new.kid  # this process: at once
        worker.stdin.write("go\n")
        worker.stdin.flush()
        out, _ = worker.communicate(timeout=30)
    finally:
        worker.kill()
    kid, old_still_verifies, seconds = out.split()
    assert kid == new.kid and old_still_verifies == "True"
    assert float(seconds) <= CHECK_SECONDS + 0.5
