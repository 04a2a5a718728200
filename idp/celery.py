"""The Celery app: Redis broker (IDP_REDIS_URL) in production, workers + beat started with
``celery -A idp worker -B`` (or separate ``celery -A idp beat``). In dev mode nothing uses the
broker: background work runs in-process (CELERY_TASK_ALWAYS_EAGER, and the webhooks runner)."""
import os

from celery import Celery
from celery.signals import worker_ready

from idp.heap import freeze_startup_objects

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "idp.settings.dev")

app = Celery("idp")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_after_configure.connect
def _periodic_tasks(sender, **kwargs):
    from django.conf import settings

    from idp.config import env_number
    from webhooks import conf

    sender.add_periodic_task(env_number("IDP_PURGE_INTERVAL", 300.0), sender.signature("realms.purge"),
                             name="purges")
    if "webhooks" in settings.INSTALLED_APPS:
        sender.add_periodic_task(conf.get("IDP_WEBHOOK_SWEEP_INTERVAL"), sender.signature("webhooks.sweep"),
                                 name="webhooks sweep")


@worker_ready.connect
def _freeze_startup_objects(**kwargs):
    # Measured before: 30-70 ms pauses of every thread, the worst webhook tails.
    freeze_startup_objects()
