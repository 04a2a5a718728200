from django.apps import AppConfig


class OidcConfig(AppConfig):
    name = "oidc"
    verbose_name = "OpenID Connect"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from realms.account import register_sign_in
        from realms.admin_api import resources
        from realms.admin_api.authentication import register_token_verifier
        from realms.http.transport import register_json_endpoints
        from realms.representation.clients import register_attribute_check, register_attribute_part
        from realms.representation.protocol_mappers import register_mapper_check
        from realms.users.consents import register_consent_store

        from . import (
            admin_api,
            authorize,
            backchannel,
            client_policies,
            consent,
            grants,
            mappers,
            mtls,
            purges,
            request_object,
            tokens,
        )
        from .admin_tokens import verify
        from .urls import PROTOCOL_ENDPOINTS

        authorize.register()
        grants.register()
        from .ciba import register as register_ciba; register_ciba()  # noqa: E702, I001 -- one line per grant
        from .registration import admin_api as registration_api; resources.register(*registration_api.urlpatterns)  # noqa: E702, I001, E501
        from .device_verification import register as register_device; register_device()  # noqa: E702, I001 -- one line per grant
        from .jwt_grant import register as register_jwt_grant; register_jwt_grant()  # noqa: E702, I001 -- one line per grant
        from .token_exchange import register as register_token_exchange; register_token_exchange()  # noqa: E702, I001 -- one line per grant
        from .uma import register as register_uma; register_uma()  # noqa: E702, I001 -- one line per grant
        backchannel.connect_signals()
        from .ssf import events as ssf_events; ssf_events.register()  # noqa: E702, I001 -- SETs and their listener
        from .ssf import transfer as ssf_transfer; ssf_transfer.register(register_attribute_part)  # noqa: E702, I001 -- streams in exports
        register_token_verifier(verify)
        register_consent_store(consent.user_consents, consent.revoke)
        register_sign_in(authorize.account_sign_in_url)
        register_json_endpoints(PROTOCOL_ENDPOINTS)  # sslRequired refusals there are OAuth JSON
        resources.register(*admin_api.urlpatterns)
        register_attribute_check("request objects and PAR", request_object.check_attributes)
        register_attribute_check("token signing and encryption", tokens.check_attributes)
        register_attribute_check("mutual TLS", mtls.check_attributes)
        register_mapper_check("openid-connect", mappers.check_mapper)
        client_policies.register()
        purges.register_all()
