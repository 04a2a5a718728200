from django.apps import AppConfig


class RealmsConfig(AppConfig):
    name = "realms"
    verbose_name = "Realms"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from . import keys  # noqa: F401  (connects key-cache invalidation)
        from . import sessions  # noqa: F401  (connects session-cache invalidation)
        from . import realm_cache
        from . import authenticators, required_actions  # noqa: F401  (register built-in sign-in steps)
        from django.db.models.signals import post_migrate

        from .services import ensure_master_realm

        post_migrate.connect(ensure_master_realm, sender=self, dispatch_uid="realms-master-realm")
        realm_cache.connect_signals()
