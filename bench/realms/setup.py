"""Create the realms of the many-realms benchmark: ``COUNT`` realms named ``realm-0000`` ...,
each with a confidential client with a service account (``app``, secret ``SECRET``) and a user,
through the realm import (one call per realm, its built-ins included, as an admin's import would
make them), in one process per core (each imports every n-th missing realm); the ``master``
realm with a console admin. Prints a session cookie of that admin, for the console's realm list.

Usage: setup.py COUNT"""
import multiprocessing
import os
import sys

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "idp.settings.prod")
django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY  # noqa: E402
from django.contrib.sessions.backends.db import SessionStore  # noqa: E402
from django.db import connections  # noqa: E402

from realms.models import Realm, Role, User  # noqa: E402
from realms.representation import import_realm  # noqa: E402
from realms.representation.services import create_realm  # noqa: E402

SECRET = "bench-secret-0123456789abcdefghijklmnop"


def realm_name(n):
    return f"realm-{n:04d}"


def create(names):
    for name in names:
        import_realm({
            "realm": name,
            "clients": [{"clientId": "app", "secret": SECRET, "serviceAccountsEnabled": True}],
            "users": [{"username": "user", "enabled": True, "email": "user@example.org"}],
        })
    connections.close_all()


def main(count):
    have = set(Realm.objects.values_list("name", flat=True))
    master = Realm.objects.filter(name="master").first() or create_realm("master")
    missing = [realm_name(n) for n in range(count) if realm_name(n) not in have]
    processes = min(len(os.sched_getaffinity(0)), len(missing))
    if processes > 1:
        connections.close_all()  # each process opens its own
        # fork: the children keep this process's Django set up. Imports of different realms
        # touch different rows (the master realm's <name>-realm clients included).
        with multiprocessing.get_context("fork").Pool(processes) as pool:
            pool.map(create, [missing[i::processes] for i in range(processes)])
    else:
        create(missing)
    admin, _ = User.objects.get_or_create(realm=master, username="bench-admin")
    admin.roles.add(Role.objects.get(realm=master, client=None, name="admin"))
    session = SessionStore()
    session.update({SESSION_KEY: str(admin.pk), BACKEND_SESSION_KEY: settings.AUTHENTICATION_BACKENDS[0],
                    HASH_SESSION_KEY: admin.get_session_auth_hash()})
    session.create()
    sys.stdout.write(f"{settings.SESSION_COOKIE_NAME}={session.session_key}\n")


if __name__ == "__main__":
    main(int(sys.argv[1]))
