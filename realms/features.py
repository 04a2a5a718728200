"""Server features, switched as Keycloak's ``--features`` and ``--features-disabled`` switch
them: ``IDP_FEATURES`` and ``IDP_FEATURES_DISABLED``, comma-separated feature names.

A supported feature is on unless disabled; a preview or experimental one is off unless enabled.
Code asks ``enabled(name)`` at the moment it would act (a setting changed in a test takes effect
at once); the Admin API's server info lists what is off and what is preview from the same table.
"""
from django.conf import settings

SUPPORTED, PREVIEW, EXPERIMENTAL, DEPRECATED = "supported", "preview", "experimental", "deprecated"

# name -> (kind, what it switches). Keycloak's names where Keycloak has the feature.
FEATURES = {
    "device-flow": (SUPPORTED, "OAuth 2.0 Device Authorization Grant (RFC 8628)"),
    "ciba": (SUPPORTED, "OpenID Connect Client-Initiated Backchannel Authentication"),
    "token-exchange-standard": (SUPPORTED, "Standard token exchange (RFC 8693), internal to internal"),
    "token-exchange": (PREVIEW, "Legacy token exchange (V1): external to internal, impersonation"),
    "token-exchange-delegation": (PREVIEW, "Token exchange delegation: the act claim (RFC 8693 §4.1)"),
    "jwt-authorization-grant": (SUPPORTED, "JWT authorization grant (RFC 7523 §2.1)"),
    "client-registration": (SUPPORTED, "Dynamic client registration (RFC 7591, RFC 7592)"),
    "client-id-metadata-document": (EXPERIMENTAL, "OAuth Client ID Metadata Documents"),
    "ssf": (EXPERIMENTAL, "OpenID Shared Signals Framework transmitter (CAEP, RISC)"),
    "stateless": (PREVIEW, "Stateless: caches in the database, sites connected by the database alone"),
}
ON_BY_DEFAULT = (SUPPORTED, DEPRECATED)


def _names(setting):
    return {n.strip() for n in (getattr(settings, setting, "") or "").split(",") if n.strip()}


def enabled(name):
    """Whether the feature ``name`` (a key of FEATURES) is on."""
    kind = FEATURES[name][0]
    if name in _names("IDP_FEATURES_DISABLED"):
        return False
    return kind in ON_BY_DEFAULT or name in _names("IDP_FEATURES")


def unknown_names():
    """Names in IDP_FEATURES or IDP_FEATURES_DISABLED that are no feature (a start-up problem)."""
    return sorted((_names("IDP_FEATURES") | _names("IDP_FEATURES_DISABLED")) - set(FEATURES))


def disabled():
    return sorted(name for name in FEATURES if not enabled(name))


def of_kind(kind):
    return sorted(name for name, (k, _) in FEATURES.items() if k == kind)
