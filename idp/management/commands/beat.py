"""manage.py beat: Celery beat, which sends the periodic tasks (expired sessions, the webhook
outbox sweep and retention, ...) to the workers; run exactly one, beside ``manage.py worker``.
Its schedule state lives in the var directory. Extra arguments go to ``celery beat``."""
from django.conf import settings
from django.core.management.base import BaseCommand

from .worker import checked


class Command(BaseCommand):
    help = "Run Celery beat with the project's settings (production; extra arguments go to celery beat)."

    def add_arguments(self, parser):
        parser.add_argument("celery_args", nargs="*", help="passed to celery beat (after --)")

    def handle(self, *args, celery_args, **options):
        checked("beat")
        from idp.celery import app

        settings.VAR_DIR.mkdir(parents=True, exist_ok=True)
        app.start(["beat", "--loglevel", "INFO", "--schedule", str(settings.VAR_DIR / "celerybeat-schedule"),
                   *celery_args])
