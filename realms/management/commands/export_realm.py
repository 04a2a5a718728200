"""manage.py export_realm REALM [--file FILE]: write a realm as Keycloak RealmRepresentation JSON."""
import json
import sys

from django.core.management import call_command
from django.core.management.base import BaseCommand

from realms.models import Realm
from realms.representation import export_realm


class Command(BaseCommand):
    help = "Export a realm (with users, credentials, client secrets and keys) as Keycloak JSON."

    def add_arguments(self, parser):
        parser.add_argument("realm", help="realm name")
        parser.add_argument("--file", help="write here instead of standard output")

    def handle(self, *args, realm, file, **options):
        call_command("migrate", interactive=False, verbosity=0)  # as Keycloak's export, on any database
        obj = Realm.objects.filter(name=realm).first()
        if obj is None:
            self.stderr.write(f"export_realm: no realm named {realm!r}")
            sys.exit(1)
        text = json.dumps(export_realm(obj), indent=2, ensure_ascii=False) + "\n"
        if file:
            try:
                with open(file, "w", encoding="utf-8") as fh:
                    fh.write(text)
            except OSError as exc:
                self.stderr.write(f"export_realm: cannot write {file}: {exc.strerror}")
                sys.exit(1)
            self.stderr.write(f"exported realm {realm!r} to {file}")
        else:
            self.stdout.write(text, ending="")
