"""manage.py start: production mode under gunicorn.

Checks configuration first and stops with one line naming a missing or unusable setting;
then applies migrations, creates the bootstrap admin, collects static files and serves. The
management server (health, metrics) runs in the gunicorn master on its own port."""
import os

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import connections

from idp.config import ConfigError, check_production


class Command(BaseCommand):
    help = "Start the service in production mode (gunicorn, PostgreSQL, Redis)."

    def add_arguments(self, parser):
        parser.add_argument("--http-port", type=int, default=int(os.environ.get("IDP_HTTP_PORT", "8080")))
        parser.add_argument("--management-port", type=int, default=settings.IDP_MANAGEMENT_PORT)
        parser.add_argument("--bind", default=os.environ.get("IDP_BIND", "0.0.0.0"))
        parser.add_argument("--management-bind", default=os.environ.get("IDP_MANAGEMENT_BIND", "127.0.0.1"))
        parser.add_argument("--workers", type=int, default=int(os.environ.get("IDP_WORKERS", "0")),
                            help="gunicorn workers (default: one per core)")
        # Threaded workers with keep-alive cost about 130 µs less CPU per request than sync
        # workers in bench/oidc (docs/benchmarks.md).
        parser.add_argument("--threads", type=int, default=int(os.environ.get("IDP_THREADS", "4")),
                            help="threads per worker (default 4; 1 = sync workers)")

    def handle(self, *args, http_port, management_port, bind, management_bind, workers, threads, **options):
        if getattr(settings, "IDP_DEV_MODE", False):
            raise CommandError("start needs the production settings (DJANGO_SETTINGS_MODULE=idp.settings.prod)")
        try:
            check_production(settings)
        except ConfigError as exc:
            raise CommandError(str(exc)) from None
        from realms.bootstrap import ensure_bootstrap_admin

        call_command("migrate", interactive=False, verbosity=0)
        try:
            ensure_bootstrap_admin()
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        call_command("collectstatic", interactive=False, verbosity=0)
        connections.close_all()  # nothing open may be inherited by forked workers

        from gunicorn.app.base import BaseApplication

        from idp.management_server import start_management_server
        from idp.wsgi import application

        class Server(BaseApplication):
            def load_config(self):
                self.cfg.set("bind", [f"{bind}:{http_port}"])
                self.cfg.set("workers", workers or len(os.sched_getaffinity(0)))  # the cores this process may use
                self.cfg.set("threads", threads)
                self.cfg.set("worker_class", "gthread" if threads > 1 else "sync")
                self.cfg.set("accesslog", os.environ.get("IDP_ACCESS_LOG") or None)
                self.cfg.set("logger_class", "idp.logs.AccessLogger")  # query values redacted
                self.cfg.set("keepalive", 5)
                # gunicorn must not turn X-Forwarded-Proto into the scheme itself (it trusts
                # loopback by default): realms.transport believes IDP_TRUSTED_PROXIES only.
                self.cfg.set("forwarded_allow_ips", "")
                self.cfg.set("secure_scheme_headers", {})
                self.cfg.set("when_ready", lambda server: start_management_server(management_bind, management_port))

            def load(self):
                return application

        Server().run()
