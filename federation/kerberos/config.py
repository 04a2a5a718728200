"""The configuration of a ``kerberos`` user storage component, under Keycloak's names
(KerberosConstants and the provider factory's properties), read from the component's
multivalued config and validated when a component is imported or saved."""
from dataclasses import dataclass

from realms.users.storage import InvalidConfig

KERBEROS_PRINCIPAL = "KERBEROS_PRINCIPAL"  # Keycloak's user attribute
READ_ONLY, UNSYNCED = "READ_ONLY", "UNSYNCED"
EDIT_MODES = (READ_ONLY, UNSYNCED)  # Keycloak's Kerberos provider offers no WRITABLE mode
_BOOLEANS = ("debug", "allowPasswordAuthentication", "updateProfileFirstLogin")
_REQUIRED = (("kerberosRealm", "Kerberos realm"), ("serverPrincipal", "Server principal"), ("keyTab", "KeyTab"))


def _first(config, name, default=""):
    values = config.get(name) or []
    return values[0] if values else default


def missing_setting(config):
    """The message naming the first Kerberos setting ``config`` (a component's multivalued
    config) lacks, or '' (the Kerberos provider's and LDAP's Kerberos integration's check)."""
    return next((f"{label} is required ({name})" for name, label in _REQUIRED if not _first(config, name).strip()), "")


def validate(config, parent_config=None):
    """Raise InvalidConfig for a configuration this provider cannot run with."""
    if missing := missing_setting(config):
        raise InvalidConfig(missing)
    for name in _BOOLEANS:
        if _first(config, name, "false").lower() not in ("true", "false"):
            raise InvalidConfig(f"{name} must be true or false")
    mode = _first(config, "editMode", READ_ONLY)
    if mode not in EDIT_MODES:
        raise InvalidConfig(f"editMode must be one of {', '.join(EDIT_MODES)} (got {mode!r})")


@dataclass(frozen=True)
class KerberosConfig:
    kerberos_realm: str
    server_principal: str
    keytab: str
    allow_password_authentication: bool
    update_profile_first_login: bool
    edit_mode: str
    debug: bool

    @classmethod
    def of(cls, component):
        def flag(name):
            return component.get(name, "false").lower() == "true"

        return cls(kerberos_realm=component.get("kerberosRealm").strip(),
                   server_principal=component.get("serverPrincipal").strip(),
                   keytab=component.get("keyTab").strip(),
                   allow_password_authentication=flag("allowPasswordAuthentication"),
                   update_profile_first_login=flag("updateProfileFirstLogin"),
                   edit_mode=component.get("editMode", READ_ONLY) or READ_ONLY,
                   debug=flag("debug"))
