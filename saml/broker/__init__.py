"""The SAML v2.0 identity provider type of identity brokering (Keycloak's ``saml`` provider): the
realm signs in through another SAML identity provider, acting as its service provider.

* ``config``: Keycloak's SAMLIdentityProviderConfig keys, checked (``clean_config``), and the
  config read from the provider's metadata (``import_config``);
* ``provider``: the type the broker calls (the AuthnRequest, the answer at the broker endpoint);
* ``response``: the provider's Response checked with the same hardened code our IdP reads its
  requests with (``saml.xml``, ``saml.inbound``, ``saml.signatures``), plus ``decryption`` for
  encrypted assertions (the realm's keys our SP metadata publishes);
* ``descriptor``: our SP metadata at ``/broker/{alias}/endpoint/descriptor``;
* ``logout``: single logout both ways;
* ``mappers``: Keycloak's SAML identity provider mappers (attribute to role, attribute importer,
  XPath attribute importer, advanced attribute to role).

Registered from ``SamlConfig.ready`` into ``realms.brokering``'s registries; ``realms`` never
imports this package."""
