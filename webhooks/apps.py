from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "webhooks"
    verbose_name = "Webhooks"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from realms.admin_api import resources
        from realms.data import sealed

        from . import catalogue, conf, delivery, dispatch, metrics, models, outbox, purges, receiver, snapshots, tasks
        from .urls import urlpatterns

        conf.check_retired()

        metrics.register()
        catalogue.register_version(snapshots.V1)
        outbox.connect_signals()
        dispatch.register(dispatch.DELIVERIES, delivery.process)
        dispatch.register(dispatch.RECEIVED, receiver.process, tasks.process_received)
        dispatch.register_sweep(delivery.sweep)
        resources.register(*urlpatterns)
        purges.register_all()
        sealed.register("webhook secrets", sealed.text_column(models.EndpointSecret, "secret_encrypted"))
