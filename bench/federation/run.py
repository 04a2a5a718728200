"""The figures of bench/federation/run.sh (see there); prints one JSON object."""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.federation.settings")

import django  # noqa: E402

django.setup()

import ldap  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from bench.proc import cpu_seconds  # noqa: E402
from federation.ldap.api import add_default_mappers  # noqa: E402
from federation.ldap.sync import sync  # noqa: E402
from realms.models import Component, Realm, Role, User  # noqa: E402
from realms.representation.services import create_realm  # noqa: E402
from realms.signin import passwords  # noqa: E402
from realms.users.accounts import create_user  # noqa: E402
from tests.federation.slapd import PEOPLE, SERVICE_DN, SERVICE_PASSWORD, Slapd  # noqa: E402


def p50(fn, n):
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


class Cpu:
    """CPU seconds spent by this process, its PostgreSQL backend and slapd: on a machine others
    load, wall-clock time stretches with their load; the CPU a phase needs does not, and on an
    idle machine the phase (one thread, one backend, one slapd, taking turns) lasts about that long."""

    def __init__(self, slapd_pid):
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            self.pids = (os.getpid(), cursor.fetchone()[0], slapd_pid)

    def now(self):
        return sum(cpu_seconds(pid) for pid in self.pids)

    def measure(self, fn):
        wall, cpu = time.perf_counter(), self.now()
        value = fn()
        return value, round(time.perf_counter() - wall, 2), round(self.now() - cpu, 2)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--users", type=int, default=100000)
    parser.add_argument("--changed", type=int, default=1000)
    parser.add_argument("--signins", type=int, default=300)
    args = parser.parse_args()
    out = {"users": args.users}
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        directory = Slapd(Path(tmp), users=args.users)
        out["slapadd_and_start_s"] = round(time.perf_counter() - t, 1)
        try:
            Realm.objects.filter(name="ldap-bench").delete()
            realm = create_realm("ldap-bench")
            component = Component.objects.create(
                realm=realm, name="ldap", provider_id="ldap", provider_type=Component.USER_STORAGE, parent_id=realm.pk,
                config={k: [v] for k, v in {
                    "vendor": "other", "connectionUrl": directory.url, "bindDn": SERVICE_DN,
                    "bindCredential": SERVICE_PASSWORD, "usersDn": PEOPLE, "usernameLDAPAttribute": "uid",
                    "rdnLDAPAttribute": "uid", "uuidLDAPAttribute": "entryUUID", "editMode": "READ_ONLY",
                    "userObjectClasses": "inetOrgPerson", "pagination": "true", "batchSizeForSync": "1000",
                    "connectionPooling": "true", "importEnabled": "true"}.items()})
            add_default_mappers(component)

            cpu = Cpu(directory.proc.pid)
            result, out["full_sync_wall_s"], out["full_sync_cpu_s"] = cpu.measure(lambda: sync(component))
            assert result["added"] == args.users, result

            admin = directory.admin()
            for start in range(0, args.changed, 200):
                for msgid in [admin.modify_ext(f"uid=bulk{i:06},{PEOPLE}", [(ldap.MOD_REPLACE, "sn", [b"Changed"])])
                              for i in range(start, min(start + 200, args.changed))]:
                    admin.result3(msgid)
            admin.unbind_s()
            result, out["changed_sync_wall_s"], out["changed_sync_cpu_s"] = cpu.measure(
                lambda: sync(Component.objects.get(pk=component.pk), changed_only=True))
            out["changed_sync_updated"] = result["updated"]

            create_user(realm, "local-user", password="local-password-1")
            assert passwords.check_password(realm, "bulk000001", "password-1").ok
            for kind, name, password in (("federated", "bulk000001", "password-1"),
                                         ("local", "local-user", "local-password-1")):
                def check(name=name, password=password):
                    return passwords.check_password(realm, name, password)

                median, _, cpu_s = cpu.measure(lambda check=check: p50(check, args.signins))
                out[f"signin_{kind}_p50_ms"] = round(median, 2)
                out[f"signin_{kind}_cpu_ms"] = round(cpu_s * 1000 / args.signins, 2)

            admin_user = create_user(realm, "bench-admin", password="bench-admin-password")
            admin_user.roles.add(*Role.objects.filter(realm=realm, client__client_id="realm-management",
                                                      name="view-users"))
            token = Client().post("/realms/ldap-bench/protocol/openid-connect/token", {
                "grant_type": "password", "client_id": "admin-cli", "username": "bench-admin",
                "password": "bench-admin-password"}).json()["access_token"]
            directory.stop()  # any query to the directory would now fail the listing
            api = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
            with CaptureQueriesContext(connection) as queries:
                t = time.perf_counter()
                resp = api.get("/admin/realms/ldap-bench/users", {"max": 100, "search": "bulk"})
                out["list_100_ms"] = round((time.perf_counter() - t) * 1000, 1)
            listed = resp.json()
            assert resp.status_code == 200 and len(listed) == 100, resp.content[:300]
            assert all(u.get("federationLink") == component.pk for u in listed)
            out["list_100_directory_queries"] = 0  # the directory was stopped and the listing answered
            out["list_100_sql_queries"] = len(queries)
            out["imported_users"] = User.objects.filter(federation_link=component).count()
        finally:
            directory.stop()
            Realm.objects.filter(name="ldap-bench").delete()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
