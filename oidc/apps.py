from django.apps import AppConfig


class OidcConfig(AppConfig):
    name = "oidc"
    verbose_name = "OpenID Connect"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from . import authorize, backchannel  # noqa: F401  (sign-in completion, logout propagation)
        from realms.api.authentication import register_token_verifier

        from .admin_tokens import verify

        register_token_verifier(verify)
