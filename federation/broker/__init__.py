"""OpenID Connect, OAuth 2 and social identity provider types for identity brokering.

The broker (``realms.brokering``) knows no protocol; this package is the client side of OpenID
Connect and OAuth 2 it calls: the redirect to a provider, the code exchanged at its token endpoint
(every call through ``realms.http.outbound``), the ID token checked against the provider's keys,
userinfo, logout at the provider and the provider's back-channel logout. It never imports ``oidc``
(our own provider's side): JOSE is done here with jwcrypto, as a client does it.

* ``config``: Keycloak's config keys of the ``oidc`` and ``oauth2`` types, checked and read.
* ``jose``: the provider's keys (JWKS cached per process) and token checks.
* ``client``: the token and userinfo calls, client authentication.
* ``provider``: the ``oidc``, ``keycloak-oidc`` and ``oauth2`` types.
* ``social``: the social presets (Google, GitHub ...), declarations over the same machinery.
* ``mappers``: the claim-reading mappers (attribute importer, claim to role, advanced ones).
"""
