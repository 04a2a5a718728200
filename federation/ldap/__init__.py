"""The LDAP / Active Directory user storage provider (Keycloak's ``ldap`` provider id) and its
mappers, registered into ``realms.users.storage`` and the Admin API from ``FederationConfig.ready()``."""
