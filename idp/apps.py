from django.apps import AppConfig


class IdpConfig(AppConfig):
    name = "idp"
    verbose_name = "Identity platform"

    def ready(self):
        from . import metrics, tracing

        metrics.listen()  # user events counted as Keycloak's keycloak_user_events_total
        tracing.setup()
