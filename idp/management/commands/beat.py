"""manage.py beat: Celery beat, which sends the periodic tasks (expired sessions, the webhook
outbox sweep and retention, each LDAP provider's syncs, ...) to the workers; run exactly one,
beside ``manage.py worker``. Its schedule lives in the database (django-celery-beat's tables,
``CELERY_BEAT_SCHEDULER``), where the providers' periods are kept. Extra arguments go to
``celery beat``."""
from django.core.management.base import BaseCommand

from .worker import checked


class Command(BaseCommand):
    help = "Run Celery beat with the project's settings (production; extra arguments go to celery beat)."

    def add_arguments(self, parser):
        parser.add_argument("celery_args", nargs="*", help="passed to celery beat (after --)")

    def handle(self, *args, celery_args, **options):
        checked("beat")
        from idp.celery import app

        app.start(["beat", "--loglevel", "INFO", *celery_args])
