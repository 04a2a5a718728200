"""manage.py start: production mode under Granian.

Checks configuration first and stops with one line naming a missing or unusable setting;
then applies migrations and creates the bootstrap admin (one node at a time on a shared
PostgreSQL), collects static files and serves. The management server (health, metrics) runs in
the main process on its own port from the start: /health/started says UP once all that is done.

Granian (docs/decisions/0017-hardening.md) reads every connection's request head in its Rust
event loop (closed when not complete within ``IDP_HEADER_READ_TIMEOUT`` seconds of the connection
opening or of the previous answer, whether it sent some bytes or none), and ``idp.buffered_wsgi``
reads the body in the worker's event loop (408 and closed when not complete within
``IDP_BODY_READ_TIMEOUT`` seconds) before Django's WSGI application gets one of the worker's
``--threads``: clients that send slowly cost a socket, not a thread. Each worker accepts as many
connections as its file descriptors allow (``connection_cap``), so silent ones cannot fill a
smaller quota before their timer closes them (decision 0086)."""
import logging
import os
import resource
import threading
from contextlib import contextmanager
from functools import partial

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import connections

from idp.config import ConfigError, check_production, env_number

# The advisory lock nodes starting together take in turn: any fixed number no other code uses.
STARTUP_LOCK_KEY = 0x1D9_57A27
FD_RESERVE = 256  # descriptors a worker keeps for its database and Redis connections, logs and files


def connection_cap():
    """The open connections each worker accepts: its descriptor limit, first raised to the hard
    limit as servers do, less ``FD_RESERVE``. Past it a worker stops accepting (new connections
    wait in the kernel's listen queue) while those it has go on being served."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):  # an unlimited hard limit is above the kernel's nr_open
            pass
    if soft == resource.RLIM_INFINITY:
        soft = 1 << 20
    return max(soft - FD_RESERVE, 64)


@contextmanager
def startup_lock():
    """Nodes started at the same moment on one PostgreSQL migrate and create the bootstrap admin
    one after the other: the next finds the schema and the admin there (without it, two migrate
    at once and the second dies creating the same admin). Held on a connection of its own, which
    nothing in between can close; closing it releases the lock. SQLite serves one node only."""
    if connections["default"].vendor != "postgresql":
        yield
        return
    lock = connections.create_connection("default")
    try:
        with lock.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(%s)", [STARTUP_LOCK_KEY])
        yield
    finally:
        lock.close()


class Command(BaseCommand):
    help = "Start the service in production mode (Granian, PostgreSQL, Redis)."

    def add_arguments(self, parser):
        parser.add_argument("--http-port", type=int, default=env_number("IDP_HTTP_PORT", 8080))
        parser.add_argument("--management-port", type=int, default=settings.IDP_MANAGEMENT_PORT)
        parser.add_argument("--bind", default=os.environ.get("IDP_BIND", "0.0.0.0"))
        parser.add_argument("--management-bind", default=os.environ.get("IDP_MANAGEMENT_BIND", "127.0.0.1"))
        parser.add_argument("--workers", type=int, default=env_number("IDP_WORKERS", 0),
                            help="worker processes (default: one per core)")
        parser.add_argument("--threads", type=int, default=env_number("IDP_THREADS", 4),
                            help="threads per worker running Django (default 4)")
        parser.add_argument("--header-read-timeout", type=float,
                            default=env_number("IDP_HEADER_READ_TIMEOUT", 10.0),
                            help="seconds a client has to send a request head (default 10)")
        parser.add_argument("--body-read-timeout", type=float,
                            default=env_number("IDP_BODY_READ_TIMEOUT", 10.0),
                            help="seconds a client has to send a request body once its head is read (default 10)")
        parser.add_argument("--shutdown-delay", type=float, default=env_number("IDP_SHUTDOWN_DELAY", 1.0),
                            help="seconds readiness says DOWN before the node stops accepting (default 1)")
        parser.add_argument("--shutdown-timeout", type=int, default=env_number("IDP_SHUTDOWN_TIMEOUT", 10),
                            help="seconds requests in flight have to finish once it stops accepting (default 10)")

    def handle(self, *args, http_port, management_port, bind, management_bind, workers, threads,
               header_read_timeout, body_read_timeout, shutdown_delay, shutdown_timeout, **options):
        if getattr(settings, "IDP_DEV_MODE", False):
            raise CommandError("start needs the production settings (DJANGO_SETTINGS_MODULE=idp.settings.prod)")
        try:
            check_production(settings)
        except ConfigError as exc:
            raise CommandError(str(exc)) from None
        from idp.management_server import start_management_server
        from idp.metrics import use_multiprocess_dir
        from realms.representation.bootstrap import NO_ADMIN_WARNING, admin_exists, ensure_bootstrap_admin

        # Before the workers fork, so that they keep their metrics where /metrics reads them; one
        # directory per node (its management port) for nodes sharing a var directory.
        use_multiprocess_dir(settings.VAR_DIR / "metrics" / str(management_port))
        # Up from here, so that a node waiting for another's migrations is live but not started.
        management = start_management_server(management_bind, management_port, (bind, http_port), started=False)
        with startup_lock():
            # First: migrations already drop cached copies (feature stateless: in that table).
            call_command("createcachetable", verbosity=0)
            call_command("migrate", interactive=False, verbosity=0)
            try:
                ensure_bootstrap_admin()
            except ValueError as exc:
                raise CommandError(str(exc)) from None
        if not admin_exists():
            logging.getLogger("idp.start").warning(NO_ADMIN_WARNING)  # a log line: JSON when the logs are
        call_command("collectstatic", interactive=False, verbosity=0)
        connections.close_all()  # nothing open may be inherited by the worker processes
        management.started.set()

        from granian import Granian
        from granian.constants import HTTPModes, Interfaces
        from granian.http import HTTP1Settings

        from idp.buffered_wsgi import django_application
        from idp.logs import granian_log_config

        server = Granian(
            "idp.wsgi:application", address=bind, port=http_port,  # named in the process title
            interface=Interfaces.ASGINL, websockets=False,  # plain HTTP requests only
            # HTTP/1.1 only: in "auto" mode nothing times a connection before its first byte
            # (the protocol is not known yet), and silent connections stay open for ever.
            http=HTTPModes.http1, backpressure=connection_cap(),
            workers=workers or len(os.sched_getaffinity(0)),  # the cores this process may use
            respawn_failed_workers=True,
            http1_settings=HTTP1Settings(header_read_timeout=int(header_read_timeout * 1000)),
            # Granian's access line has the path without the query (which carries
            # id_token_hint, login hints ...) and no referrer.
            log_access=bool(os.environ.get("IDP_ACCESS_LOG")), log_dictconfig=granian_log_config(),
            working_dir=settings.BASE_DIR,
            workers_kill_timeout=shutdown_timeout,
        )
        stop_now = server.signal_handler_interrupt

        def stop_gracefully(*args):
            """SIGTERM: readiness DOWN at once, so that the load balancer stops sending; after the
            delay the workers stop accepting and finish what they have (a second signal: now)."""
            if management.stopping.is_set():
                return stop_now()
            management.stopping.set()
            threading.Timer(shutdown_delay, stop_now).start()

        server.signal_handler_interrupt = stop_gracefully  # Granian installs it when it serves
        # Each worker process builds the application with the pool size and body deadline.
        server.serve(target_loader=partial(django_application, threads, body_read_timeout), wrap_loader=False)
