"""manage.py import_realm FILE [--override]: import a Keycloak realm representation (JSON)."""
import json
import sys

from django.core.management import call_command
from django.core.management.base import BaseCommand

from realms.representation import RepresentationError, import_realm


class Command(BaseCommand):
    help = "Import a realm from a Keycloak RealmRepresentation JSON file (one transaction)."

    def add_arguments(self, parser):
        parser.add_argument("file", help="path of the JSON file, or - for standard input")
        parser.add_argument("--override", action="store_true", help="replace the realm if it exists")

    def handle(self, *args, file, override, **options):
        # As Keycloak's import: the schema is brought up to date first (a fresh checkout has none).
        call_command("migrate", interactive=False, verbosity=0)
        try:
            if file == "-":
                data = json.load(sys.stdin)
            else:
                with open(file, encoding="utf-8") as fh:
                    data = json.load(fh)
            result = import_realm(data, override=override)
        except OSError as exc:
            self._fail(f"cannot read {file}: {exc.strerror}")
        except ValueError as exc:  # json.JSONDecodeError is a ValueError
            self._fail(f"{file} is not valid JSON: {exc}")
        except RepresentationError as exc:
            self._fail(str(exc))
        for warning in result.warnings:
            self.stdout.write(f"warning: {warning}")
        self.stdout.write(self.style.SUCCESS(
            f"imported realm {result.realm.name!r} ({len(result.warnings)} warning(s))"))

    def _fail(self, message):
        # One clear line and exit status 1, no traceback (CommandError would add none either,
        # but it prints "CommandError:" before the message).
        self.stderr.write(f"import_realm: {message}")
        sys.exit(1)
