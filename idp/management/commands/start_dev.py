"""manage.py start_dev: everything for a developer in one process.

Embedded SQLite, local caches, migrations applied, the bootstrap admin and a demo realm, the
public server (plain http) and the management server (health, metrics), until stopped."""
import sys

from django.conf import settings
from django.contrib.staticfiles.handlers import StaticFilesHandler
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.core.servers.basehttp import WSGIServer, run
from django.core.wsgi import get_wsgi_application
from django.urls import reverse

from idp.buffered_wsgi import capped
from idp.config import observability_problems
from idp.management_server import start_management_server


def server_bases(bind, port):
    """The addresses a browser may open this server at: on loopback both ``localhost`` and the
    address itself (the demo's redirect URI is matched exactly, so each is registered)."""
    loopback = {"127.0.0.1": ("localhost", "127.0.0.1"), "::1": ("localhost", "[::1]")}
    return [f"http://{host}:{port}" for host in loopback.get(bind, (bind,))]


class Command(BaseCommand):
    help = "Start the service in development mode (SQLite, local caches, demo realm)."

    def add_arguments(self, parser):
        parser.add_argument("--http-port", type=int, default=8080)
        parser.add_argument("--management-port", type=int, default=settings.IDP_MANAGEMENT_PORT)
        parser.add_argument("--bind", default="127.0.0.1", help="address to listen on (default loopback)")

    def handle(self, *args, http_port, management_port, bind, **options):
        if not getattr(settings, "IDP_DEV_MODE", False):
            raise CommandError("start_dev needs the dev settings (DJANGO_SETTINGS_MODULE=idp.settings.dev)")
        from realms import features

        if features.enabled("stateless"):  # its database cache is PostgreSQL's; one process shares nothing
            raise CommandError("IDP_FEATURES: stateless (several sites on one database) needs production mode (manage.py start)")
        problems = observability_problems()  # a bad value would otherwise mean "off" without a word
        if problems:
            raise CommandError("\n".join(problems))
        from realms.representation.bootstrap import (
            DEMO_CLIENT,
            NO_ADMIN_WARNING,
            admin_exists,
            ensure_bootstrap_admin,
            ensure_demo_callback,
            ensure_demo_realm,
        )

        call_command("migrate", interactive=False, verbosity=0)
        try:
            admin = ensure_bootstrap_admin()
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if not admin_exists():
            self.stderr.write(NO_ADMIN_WARNING)
        if admin:
            self.stdout.write(f"Bootstrap admin '{admin.username}' created in realm master.")
        demo_password = ensure_demo_realm()
        if demo_password:
            # Never into the log (often collected and shared): a file only this user can read.
            password_file = settings.VAR_DIR / "demo-password.txt"
            password_file.touch(mode=0o600)
            password_file.chmod(0o600)
            password_file.write_text(demo_password + "\n")
            self.stdout.write(f"Demo realm 'demo' created: user 'alice', password in {password_file}.")

        management = start_management_server(bind, management_port, (bind, http_port))
        base = server_bases(bind, http_port)[0]
        if not (settings.IDP_BASE_URL or getattr(settings, "OIDC_RESOURCE_SERVER_BASE_URL", "")):
            # The demo API's trust anchor: this server's own address, never a request's Host.
            settings.OIDC_RESOURCE_SERVER_BASE_URL = base
        self.stdout.write(f"Admin console:  {base}{reverse('admin:index')}")
        self.stdout.write(f"Demo realm:     {base}/realms/demo/.well-known/openid-configuration")
        callbacks = [ensure_demo_callback(other) for other in server_bases(bind, http_port)]
        self.stdout.write(f"Demo client:    {DEMO_CLIENT} (public, PKCE S256), redirect URIs {', '.join(callbacks)}")
        self.stdout.write(f"Demo sign-in:   {base}/demo/ (as alice; the callback shows the code exchange and tokens)")
        self.stdout.write(f"Health:         http://{bind}:{management_port}/health/ready")
        sys.stdout.flush()
        handler = capped(StaticFilesHandler(get_wsgi_application()), settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
        try:
            run(bind, http_port, handler, ipv6=":" in bind, threading=True, server_cls=WSGIServer)
        except KeyboardInterrupt:
            pass
        finally:
            management.shutdown()
