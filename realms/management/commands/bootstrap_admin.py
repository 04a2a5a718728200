"""manage.py bootstrap_admin: Keycloak 26's ``kc.sh bootstrap-admin``, to regain access to the
master realm (or get it the first time) without starting the server.

    manage.py bootstrap_admin user [--username NAME | --username:env VAR] [--password:env VAR] [--no-prompt]
    manage.py bootstrap_admin service [--client-id ID | --client-id:env VAR] [--client-secret:env VAR] [--no-prompt]

Secrets are never taken on the command line (other users see it in the process list): from an
environment variable, or typed at a prompt. The admin is marked temporary, as Keycloak marks it."""
import getpass
import os
import sys

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

DEFAULT_NAME = "temp-admin"  # Keycloak's default username and client id


class Command(BaseCommand):
    help = "Create a temporary admin user or service account in realm master (Keycloak's bootstrap-admin)."

    def add_arguments(self, parser):
        kinds = parser.add_subparsers(dest="kind", required=True, metavar="{user,service}")
        user = kinds.add_parser("user", help="an admin user with a password")
        user.add_argument("--username", default=None, help=f"the admin's username (default {DEFAULT_NAME})")
        user.add_argument("--username:env", dest="username_env", metavar="VAR",
                          help="read the username from this environment variable")
        user.add_argument("--password:env", dest="secret_env", metavar="VAR",
                          help="read the password from this environment variable")
        user.add_argument("--no-prompt", action="store_true", help="never ask; fail when something is missing")
        service = kinds.add_parser("service", help="an admin service account (client credentials)")
        service.add_argument("--client-id", dest="username", default=None,
                             help=f"the client id (default {DEFAULT_NAME})")
        service.add_argument("--client-id:env", dest="username_env", metavar="VAR",
                             help="read the client id from this environment variable")
        service.add_argument("--client-secret:env", dest="secret_env", metavar="VAR",
                             help="read the client secret from this environment variable")
        service.add_argument("--no-prompt", action="store_true", help="never ask; fail when something is missing")

    def _from_env(self, variable):
        value = os.environ.get(variable, "")
        if not value:
            raise CommandError(f"environment variable {variable} is not set or empty")
        return value

    def _secret(self, kind, variable, no_prompt):
        label = "password" if kind == "user" else "client secret"
        if variable:
            return self._from_env(variable)
        if no_prompt or not sys.stdin.isatty():
            option = "--password:env" if kind == "user" else "--client-secret:env"
            raise CommandError(f"no {label} given: name the environment variable holding it with {option}")
        first = getpass.getpass(f"Enter {label}: ")
        if first != getpass.getpass(f"Enter {label} again: "):
            raise CommandError(f"the two {label}s differ")
        return first

    def handle(self, *args, kind, username, username_env, secret_env, no_prompt, **options):
        from realms.representation.bootstrap import BootstrapError, create_admin_service, create_admin_user

        name = self._from_env(username_env) if username_env else (username or DEFAULT_NAME)
        secret = self._secret(kind, secret_env, no_prompt)
        call_command("migrate", interactive=False, verbosity=0)  # as Keycloak's: works before the first start
        try:
            if kind == "user":
                create_admin_user(name, secret)
            else:
                create_admin_service(name, secret)
        except BootstrapError as error:
            raise CommandError(f"Failed to create the temporary admin {kind}: {error}") from None
        what = "user" if kind == "user" else "service account client"
        self.stdout.write(f"Temporary admin {what} '{name}' created in realm master. "
                          "Create a permanent admin and delete this one.")
