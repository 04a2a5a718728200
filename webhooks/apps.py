from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "webhooks"
    verbose_name = "Webhooks"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from . import metrics, outbox  # noqa: F401  (outbox connects the realm_event receiver)

        metrics.register()

        from realms.api import resources

        from .urls import urlpatterns

        resources.register(*urlpatterns)
