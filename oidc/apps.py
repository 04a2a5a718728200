from django.apps import AppConfig


class OidcConfig(AppConfig):
    name = "oidc"
    verbose_name = "OpenID Connect"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from . import realm_cache  # noqa: F401  (connects the cache invalidation signals)
        from . import authorize, backchannel  # noqa: F401  (sign-in completion, logout propagation)
        from realms.transport import register_json_endpoints

        from .middleware import PROTOCOL_ENDPOINTS
        register_json_endpoints(PROTOCOL_ENDPOINTS)  # sslRequired refusals there are OAuth JSON
