"""The console's realm list as the master admin, in process (decision 0107, issue 36: the list with
1,000 realms within 10 % of one): CPU per page of this process (Django's test client, no server)
and of PostgreSQL and Redis (from /proc), and the rows the page shows. ``--create COUNT`` first
makes the realms up to COUNT beside ``master`` (bare rows named as bench/realms/setup.py's: the
list reads the realm table only) and the master admin. ``--profile`` prints where a page's CPU
goes (cProfile, by own time).

Usage: bench/realms/realm_list.sh   (runs this for 1, 11 and 1,000 realms, this tree and OLD_TREE)"""
import cProfile
import os
import pstats
import statistics
import sys
import time

import django

django.setup()

from django.test import Client  # noqa: E402

from bench.proc import tree_cpu  # noqa: E402
from realms.models import Realm, Role, User  # noqa: E402
from realms.representation.services import create_realm  # noqa: E402

PAGE = "/admin/master/console/realms/realm/"
PAGES = int(os.environ.get("PAGES", 200))


def create(count):
    master = Realm.objects.filter(name="master").first() or create_realm("master")
    Realm.objects.bulk_create((Realm(name=f"realm-{n:04d}") for n in range(count)), ignore_conflicts=True)
    admin, _ = User.objects.get_or_create(realm=master, username="bench-admin")
    admin.roles.add(Role.objects.get(realm=master, client=None, name="admin"))


def measure(profile):
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(User.objects.get(realm__name="master", username="bench-admin"))
    for _ in range(20):  # the process's templates, modules and caches
        page = client.get(PAGE)
        assert page.status_code == 200, page.status_code
    rows = page.content.decode().count('class="action-select"')
    if profile:
        profiler = cProfile.Profile()
        profiler.runcall(lambda: [client.get(PAGE) for _ in range(PAGES)])
        pstats.Stats(profiler).sort_stats("tottime").print_stats(40)
        return
    pids = [int(os.environ[name]) for name in ("PG_PID", "REDIS_PID")]
    others = [tree_cpu(pid) for pid in pids]
    cpu = []
    for _ in range(PAGES):
        started = time.process_time()
        client.get(PAGE)
        cpu.append(time.process_time() - started)
    pg, redis = ((tree_cpu(pid) - before) / PAGES * 1000 for pid, before in zip(pids, others))
    print(f"  {Realm.objects.count() - 1} realm(s) beside master, {rows} rows: page CPU median "
          f"{statistics.median(cpu) * 1000:.2f} ms (this process), PostgreSQL {pg:.2f} ms, Redis {redis:.2f} ms a page")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--create"]:
        create(int(sys.argv[2]))
    else:
        measure("--profile" in sys.argv[1:])
