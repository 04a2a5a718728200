"""An LDAP provider's settings, read from its component's config under Keycloak's names
(LDAPConstants, UserStorageProviderModel)."""
import datetime
from dataclasses import dataclass

import ldap.filter
from django.utils import timezone

from ..errors import FederationError
from ..kerberos.config import missing_setting

PROVIDER_ID = "ldap"
MAPPER_TYPE = "org.keycloak.storage.ldap.mappers.LDAPStorageMapper"

READ_ONLY, WRITABLE, UNSYNCED = "READ_ONLY", "WRITABLE", "UNSYNCED"
EDIT_MODES = (READ_ONLY, WRITABLE, UNSYNCED)
VENDORS = ("ad", "rhds", "other", "tivoli", "edirectory")
CACHE_POLICIES = ("DEFAULT", "EVICT_DAILY", "EVICT_WEEKLY", "MAX_LIFESPAN", "NO_CACHE")
# Keycloak's user attributes of an imported entry.
LDAP_ID, LDAP_ENTRY_DN = "LDAP_ID", "LDAP_ENTRY_DN"


class ConfigError(FederationError, ValueError):
    """A provider configuration that cannot work (Keycloak's ComponentValidationException)."""


def _bool(component, name, default):
    return component.get(name, "true" if default else "false").strip().lower() == "true"


def _int(component, name, default):
    try:
        return int(component.get(name, "") or default)
    except ValueError:
        raise ConfigError(f"{name} must be a number") from None


@dataclass(frozen=True)
class LdapConfig:
    component_id: str
    vendor: str
    connection_url: str
    bind_dn: str
    bind_credential: str
    auth_type: str
    start_tls: bool
    users_dn: str
    username_attr: str
    rdn_attr: str
    uuid_attr: str
    object_classes: tuple
    custom_filter: str
    subtree: bool
    pagination: bool
    batch_size: int
    pooling: bool
    connection_timeout_ms: int
    read_timeout_ms: int
    edit_mode: str
    import_enabled: bool
    sync_registrations: bool
    full_sync_period: int
    changed_sync_period: int
    cache_policy: str
    max_lifespan_ms: int
    eviction_day: int
    eviction_hour: int
    eviction_minute: int
    password_modify_op: bool
    validate_password_policy: bool
    trust_email: bool
    # Kerberos integration (Keycloak's LDAPProviderKerberosConfig): SPNEGO tickets taken with
    # the keytab; passwords checked by the KDC instead of a bind when asked to.
    allow_kerberos: bool
    use_kerberos_for_password: bool
    kerberos_realm: str
    server_principal: str
    keytab: str
    kerberos_principal_attr: str
    debug: bool

    @classmethod
    def of(cls, component, bind_credential=""):
        """The settings of a stored component; ``bind_credential`` in clear (``storage.open_config``)."""
        c = component
        # Keycloak's validateConfiguration, with its message keys.
        vendor = c.get("vendor", "other").lower()
        edit_mode = c.get("editMode").upper()
        if not edit_mode:
            raise ConfigError("ldapErrorEditModeMandatory")
        if edit_mode not in EDIT_MODES:
            raise ConfigError(f"editMode must be one of {', '.join(EDIT_MODES)}")
        if edit_mode == UNSYNCED and not _bool(c, "importEnabled", True):
            raise ConfigError("ldapErrorCantEnableUnsyncedAndImportOff")
        if _bool(c, "startTls", False) and _bool(c, "connectionPooling", False):
            raise ConfigError("ldapErrorCantEnableStartTlsAndConnectionPooling")
        for name, key in (("connectionTimeout", "ldapErrorConnectionTimeoutNotNumber"),
                          ("readTimeout", "ldapErrorReadTimeoutNotNumber")):
            if c.get(name) and not c.get(name).isdigit():
                raise ConfigError(key)
        url = c.get("connectionUrl").strip()
        if not url or not all(u.split("://")[0].lower() in ("ldap", "ldaps") and "://" in u for u in url.split()):
            raise ConfigError("connectionUrl must be ldap:// or ldaps:// URLs")
        custom = c.get("customUserSearchFilter").strip()
        if custom and not (custom.startswith("(") and custom.endswith(")")):
            raise ConfigError("ldapErrorInvalidCustomFilter")  # Keycloak's message key
        policy = c.get("cachePolicy", "DEFAULT").upper()
        if policy not in CACHE_POLICIES:
            raise ConfigError(f"cachePolicy must be one of {', '.join(CACHE_POLICIES)}")
        allow_kerberos = _bool(c, "allowKerberosAuthentication", False)
        if allow_kerberos and (missing := missing_setting(c.config)):
            raise ConfigError(missing)
        username = c.get("usernameLDAPAttribute", "sAMAccountName" if vendor == "ad" else "uid")
        return cls(
            component_id=c.pk, vendor=vendor, connection_url=url, bind_dn=c.get("bindDn"),
            bind_credential=bind_credential, auth_type=c.get("authType", "simple").lower(),
            start_tls=_bool(c, "startTls", False), users_dn=c.get("usersDn"),
            username_attr=username, rdn_attr=c.get("rdnLDAPAttribute", "cn" if vendor == "ad" else username),
            uuid_attr=c.get("uuidLDAPAttribute", "objectGUID" if vendor == "ad" else "entryUUID"),
            object_classes=tuple(o.strip() for o in c.get(
                "userObjectClasses", "person, organizationalPerson, user" if vendor == "ad"
                else "inetOrgPerson, organizationalPerson").split(",") if o.strip()),
            custom_filter=custom, subtree=c.get("searchScope", "1") == "2",
            pagination=_bool(c, "pagination", True), batch_size=max(_int(c, "batchSizeForSync", 1000), 1),
            pooling=_bool(c, "connectionPooling", False),
            connection_timeout_ms=_int(c, "connectionTimeout", 5000), read_timeout_ms=_int(c, "readTimeout", 10000),
            edit_mode=edit_mode, import_enabled=_bool(c, "importEnabled", True),
            sync_registrations=_bool(c, "syncRegistrations", False),
            full_sync_period=_int(c, "fullSyncPeriod", -1), changed_sync_period=_int(c, "changedSyncPeriod", -1),
            cache_policy=policy, max_lifespan_ms=_int(c, "maxLifespan", 0),
            eviction_day=_int(c, "evictionDay", 1), eviction_hour=_int(c, "evictionHour", 0),
            eviction_minute=_int(c, "evictionMinute", 0),
            password_modify_op=_bool(c, "usePasswordModifyExtendedOp", vendor != "ad"),
            validate_password_policy=_bool(c, "validatePasswordPolicy", False),
            trust_email=_bool(c, "trustEmail", False),
            allow_kerberos=allow_kerberos,
            use_kerberos_for_password=_bool(c, "useKerberosForPasswordAuthentication", False),
            kerberos_realm=c.get("kerberosRealm").strip(), server_principal=c.get("serverPrincipal").strip(),
            keytab=c.get("keyTab").strip(), kerberos_principal_attr=c.get("krbPrincipalAttribute").strip(),
            debug=_bool(c, "debug", False),
        )

    @property
    def is_ad(self):
        return self.vendor == "ad"

    def user_filter(self, condition=""):
        """The search filter of this provider's users, optionally narrowed by ``condition``."""
        return search_filter(self.object_classes, self.custom_filter, condition)

    def cached_until(self, cached_at):
        """When a user read from the directory at ``cached_at`` must be read again (import off;
        Keycloak's cache policy); None: until the next sync or eviction by hand."""
        if self.cache_policy == "NO_CACHE":
            return cached_at
        if self.cache_policy == "MAX_LIFESPAN":
            return cached_at + datetime.timedelta(milliseconds=self.max_lifespan_ms)
        if self.cache_policy in ("EVICT_DAILY", "EVICT_WEEKLY"):
            local = timezone.localtime(cached_at)
            at = local.replace(hour=self.eviction_hour, minute=self.eviction_minute, second=0, microsecond=0)
            if self.cache_policy == "EVICT_WEEKLY":
                # Keycloak's evictionDay: 1 = Sunday ... 7 = Saturday; Python: Monday = 0.
                at += datetime.timedelta(days=((self.eviction_day + 5) % 7 - at.weekday()) % 7)
                step = datetime.timedelta(days=7)
            else:
                step = datetime.timedelta(days=1)
            while at <= local:
                at += step
            return at
        return None


def search_filter(object_classes, custom_filter="", condition=""):
    """An LDAP filter of entries of every one of ``object_classes``, matching ``custom_filter`` (as
    the admin wrote it) and ``condition``."""
    parts = [f"(objectClass={ldap.filter.escape_filter_chars(o)})" for o in object_classes]
    parts += [p for p in (custom_filter, condition) if p]
    return parts[0] if len(parts) == 1 else f"(&{''.join(parts)})"
