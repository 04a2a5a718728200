from django.apps import AppConfig


class FederationConfig(AppConfig):
    name = "federation"
    verbose_name = "User federation"

    def ready(self):
        from .kerberos import registration

        registration.register()
