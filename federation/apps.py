from django.apps import AppConfig


class FederationConfig(AppConfig):
    name = "federation"
    verbose_name = "User federation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from .ldap.registration import register as register_ldap

        register_ldap()
