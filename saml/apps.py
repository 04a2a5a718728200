from django.apps import AppConfig


class SamlConfig(AppConfig):
    name = "saml"
    verbose_name = "SAML 2.0"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from . import logout, sso

        sso.register()
        logout.register()
