"""manage.py rotate_secret_key: after IDP_SECRET_KEY was changed (the old key moved to
IDP_SECRET_KEY_FALLBACKS), re-encrypt every secret sealed at rest under the new key, so that the
old key can be dropped. Signed values (cookies, links, refresh tokens) cannot be re-signed: they
are accepted under a fallback until they expire (docs/operations/secret-key.md).

Safe to run while the nodes serve and to run again: rows are rewritten a batch at a time under
row locks, and a value already under the current key is left alone."""
from django.core.management.base import BaseCommand, CommandError

from idp.config import secret_key_problems


class Command(BaseCommand):
    help = "Re-encrypt the secrets stored in the database under the current IDP_SECRET_KEY."

    def handle(self, *args, **options):
        problems = secret_key_problems()
        if problems:
            raise CommandError("\n".join(problems))
        from realms.data import sealed

        unreadable = []
        for name, (rewritten, lost) in sealed.reseal_all().items():
            self.stdout.write(f"{name}: {rewritten} re-encrypted")
            if lost:
                unreadable.append(f"{name}: {lost} values no key opens")
        if unreadable:
            raise CommandError("\n".join(["Sealed under a key in neither IDP_SECRET_KEY nor IDP_SECRET_KEY_FALLBACKS "
                                          "(keep every fallback until this is resolved):", *unreadable]))
        self.stdout.write("Every stored secret is sealed under IDP_SECRET_KEY.")
