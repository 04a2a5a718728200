"""The identity provider types and mapper types of this package, registered with the broker's
registries (called from ``FederationConfig.ready``)."""


def register():
    from realms.brokering.providers import register_provider_type

    from . import mappers
    from .provider import KeycloakOidcType, OAuth2Type, OidcType
    from .social import PRESETS
    from .twitter import TwitterType

    for provider_type in (OidcType(), KeycloakOidcType(), OAuth2Type(), TwitterType(),
                          *(preset() for preset in PRESETS)):
        register_provider_type(provider_type)
    mappers.register()
