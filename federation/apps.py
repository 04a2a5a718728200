from django.apps import AppConfig


class FederationConfig(AppConfig):
    name = "federation"
    verbose_name = "User federation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from .broker import registration as broker
        from .kerberos import registration as kerberos
        from .ldap import registration as ldap

        kerberos.register()
        ldap.register()
        broker.register()
