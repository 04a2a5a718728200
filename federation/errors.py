"""The base of federation's errors (a directory or a KDC unreachable or refusing, a configuration
it cannot run with). What a surface must answer crosses into ``realms`` as realms' own errors:
``realms.users.storage.Unavailable`` for a store that cannot be reached,
``realms.errors.StoreRefused`` for a change a directory refuses."""


class FederationError(Exception):
    """An error of a user storage provider (LDAP, Kerberos)."""
