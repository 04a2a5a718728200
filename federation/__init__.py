"""User federation: users who live in a directory (LDAP, Active Directory), served to the realm
through ``realms.storage``'s user storage providers."""
