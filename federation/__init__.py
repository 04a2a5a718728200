"""User federation: users whose accounts live in a directory (LDAP, Active Directory) or a
Kerberos realm, plugged into the realm through ``realms.users.storage`` (Keycloak's UserStorageProvider
SPI)."""
