from django.apps import AppConfig


class SamlConfig(AppConfig):
    name = "saml"
    verbose_name = "SAML 2.0"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from realms.brokering.providers import register_provider_type

        from . import logout, purges, sso
        from .broker import mappers as broker_mappers
        from .broker.provider import SamlProviderType

        sso.register()
        logout.register()
        purges.register_all()
        register_provider_type(SamlProviderType())
        broker_mappers.register()
