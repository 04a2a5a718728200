"""manage.py worker: the Celery worker that does production's background work (webhook
deliveries, e-mail, federation sync), with this project's settings, after the same configuration
check as ``start``. Extra arguments go to ``celery worker`` (``--concurrency 8``, ``--pool threads``).
Dev mode needs none: its background work runs inside start_dev."""
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from idp.config import ConfigError, check_production

DEV_MODE = "{what} is for production: in dev mode start_dev runs background work in-process"


def checked(what):
    """Refuse dev mode and a broken production configuration, as ``start`` does."""
    if getattr(settings, "IDP_DEV_MODE", False):
        raise CommandError(DEV_MODE.format(what=what))
    try:
        check_production(settings)
    except ConfigError as exc:
        raise CommandError(str(exc)) from None


class Command(BaseCommand):
    help = "Run the Celery worker with the project's settings (production; extra arguments go to celery worker)."

    def add_arguments(self, parser):
        parser.add_argument("celery_args", nargs="*", help="passed to celery worker (after --)")

    def handle(self, *args, celery_args, **options):
        checked("the worker")
        from idp.celery import app

        app.worker_main(["worker", "--loglevel", "INFO", *celery_args])
