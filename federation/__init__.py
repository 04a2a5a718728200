"""User federation: users whose accounts live in an external directory or Kerberos realm,
plugged into the realm through ``realms.storage`` (Keycloak's UserStorageProvider SPI)."""
