"""The console's realm list as the master admin with many realms, in process (decision 0107): CPU
per page (Django's test client, a full page of ten realms either way) and the memory the first
page leaves held (tracemalloc), with "new" (is the caller a master admin? one yes-or-no query
walking up from the ``admin`` role) against "old" (the admin's effective roles built: 19 roles of
each realm's ``<name>-realm`` client, as a Keycloak master realm has them).

    (source scripts/services.sh && services_start >/dev/null &&
     .venv/bin/python -m pytest -q -s -p no:cacheprovider bench/realms/console_master_admin_test.py; services_stop)
"""
import time
import tracemalloc

import pytest

from realms.administration import admin_permissions
from realms.data import realm_cache
from realms.models import Client, Realm, Role, User

pytestmark = pytest.mark.django_db
PAGE = "/admin/master/console/realms/realm/"


@pytest.mark.parametrize("realms", [11, 1000])
@pytest.mark.parametrize("code", ["new", "old"])
def test_realm_list_as_the_master_admin(client, code, realms, monkeypatch):
    master = Realm.objects.get_or_create(name="master")[0]
    admin_role = Role.objects.get_or_create(realm=master, client=None, name="admin")[0]
    Realm.objects.bulk_create(Realm(name=f"r{i:04d}") for i in range(realms - 1))
    clients = Client.objects.bulk_create(Client(realm=master, client_id=f"r{i:04d}-realm") for i in range(realms - 1))
    admin_role.composites.add(*Role.objects.bulk_create(
        Role(realm=master, client=c, name=f"role{j}") for c in clients for j in range(19)))
    user = User.objects.create(realm=master, username="root")
    user.roles.add(admin_role)
    client.force_login(user)
    assert client.get(PAGE).status_code == 200  # the process's templates and modules, not measured
    if code == "old":  # the code before: the master-admin check always built the admin's roles
        monkeypatch.setattr(admin_permissions, "effective_role_ids_read", lambda user: True)
    realm_cache.clear()
    tracemalloc.start()
    assert client.get(PAGE).status_code == 200
    held = tracemalloc.get_traced_memory()[0] / 2**20
    tracemalloc.stop()
    cpu = []
    for _ in range(21):
        started = time.process_time()
        assert client.get(PAGE).status_code == 200
        cpu.append(time.process_time() - started)
    print(f"\n{code}, {realms} realms: first page after the cache is emptied leaves {held:.1f} MiB held; "
          f"later pages {sorted(cpu)[10] * 1000:.1f} ms of CPU (median of 21)")
