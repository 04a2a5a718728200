"""LDAP mappers: Keycloak's ``org.keycloak.storage.ldap.mappers.LDAPStorageMapper`` components
(children of an LDAP provider's component), by provider id. Each reads its part of a directory
entry into the imported user (``read``) and, for writable providers, its part of a user into the
entry (``write``: registration, admin creation, profile changes)."""
import base64

from realms.data.crypto import random_secret
from realms.models import Component, Role

from . import membership, membership_mappers
from .config import MAPPER_TYPE
from .membership import text

UPDATE_PASSWORD = "UPDATE_PASSWORD"
RANDOM = "${RANDOM}"
# userAccountControl flags (MS-ADTS 2.2.16).
ACCOUNTDISABLE, PASSWORD_EXPIRED = 0x2, 0x800000
_FIELDS = {"username": "username", "email": "email", "firstName": "first_name", "lastName": "last_name"}


class Imported:
    """What mappers make of one entry: User fields, attributes, roles and groups to grant."""

    def __init__(self):
        self.fields, self.attributes, self.roles, self.groups, self.required_actions = {}, {}, [], [], []


class Mapper:
    creates_only = False  # written when an entry is created, never on changes

    def __init__(self, component, provider_config):
        self.component = component
        self.read_only = component.get("read.only", "false").lower() == "true"

    attributes = ()

    def read(self, entry, out, realm):
        pass

    def write(self, user, attrs):
        """Put the user's values into ``attrs`` (LDAP attribute -> list of str)."""


class UserAttribute(Mapper):
    """``user-attribute-ldap-mapper``: one LDAP attribute to a user field or attribute."""

    def __init__(self, component, provider_config):
        super().__init__(component, provider_config)
        self.ldap_attr = component.get("ldap.attribute")
        self.model_attr = component.get("user.model.attribute")
        self.binary = component.get("is.binary.attribute", "false").lower() == "true"
        self.attributes = (self.ldap_attr,)

    def values(self, entry):
        values = entry.get(self.ldap_attr.lower(), ())
        return [base64.b64encode(v).decode() if self.binary else v.decode("utf-8", "replace") for v in values]

    def read(self, entry, out, realm):
        values = self.values(entry)
        if self.model_attr in _FIELDS:
            if self.model_attr == "username":
                out.fields["username"] = (values[0] if values else "").lower()
            else:
                out.fields[_FIELDS[self.model_attr]] = values[0] if values else ""
        elif self.model_attr in ("createTimestamp", "modifyTimestamp") or values:
            out.attributes[self.model_attr] = values

    def write(self, user, attrs):
        if self.binary:
            return
        if self.model_attr in _FIELDS:
            value = getattr(user, _FIELDS[self.model_attr])
            values = [value] if value else []
        else:
            values = list((user.attributes or {}).get(self.model_attr) or [])
        if self.model_attr not in ("createTimestamp", "modifyTimestamp"):
            attrs[self.ldap_attr] = values


class Certificate(UserAttribute):
    """``certificate-ldap-mapper``: a certificate attribute (DER in the directory when
    ``is.derformatted``), kept as base64 in a user attribute."""

    def __init__(self, component, provider_config):
        super().__init__(component, provider_config)
        self.binary = self.binary or component.get("is.derformatted", "false").lower() == "true"


class FullName(Mapper):
    """``full-name-ldap-mapper``: ``cn`` (by default) as "first last"."""

    def __init__(self, component, provider_config):
        super().__init__(component, provider_config)
        self.ldap_attr = component.get("ldap.full.name.attribute", "cn")
        self.write_only = component.get("write.only", "false").lower() == "true"
        self.attributes = (self.ldap_attr,)

    def read(self, entry, out, realm):
        if self.write_only:
            return
        first, _, last = text(entry, self.ldap_attr).strip().rpartition(" ")
        out.fields["first_name"], out.fields["last_name"] = (first, last) if first else (last, "")

    def write(self, user, attrs):
        attrs[self.ldap_attr] = [" ".join(x for x in (user.first_name, user.last_name) if x) or user.username]


class HardcodedLdapAttribute(Mapper):
    """``hardcoded-ldap-attribute-mapper``: a fixed value written to entries this provider creates
    (``${RANDOM}``: a fresh random value each time)."""

    creates_only = True

    def write(self, user, attrs):
        value = self.component.get("ldap.attribute.value")
        attrs[self.component.get("ldap.attribute.name")] = [random_secret() if value == RANDOM else value]


class HardcodedAttribute(Mapper):
    """``hardcoded-attribute-mapper``: a fixed value of a user field or attribute."""

    def read(self, entry, out, realm):
        name, value = self.component.get("user.model.attribute"), self.component.get("attribute.value")
        if name in _FIELDS:
            out.fields[_FIELDS[name]] = value
        elif name == "enabled":
            out.fields["enabled"] = value.lower() == "true"
        elif name == "emailVerified":
            out.fields["email_verified"] = value.lower() == "true"
        else:
            out.attributes[name] = [value]


class HardcodedRole(Mapper):
    """``hardcoded-ldap-role-mapper``: every user of the provider has this role (``client.role``
    names a client role as ``clientId.role``)."""

    def read(self, entry, out, realm):
        out.roles.append(self.component.get("role"))


class HardcodedGroup(Mapper):
    """``hardcoded-ldap-group-mapper``: every user of the provider is a member of this group (path)."""

    def read(self, entry, out, realm):
        out.groups.append(self.component.get("group"))


class AccountControl(Mapper):
    """``msad-user-account-control-mapper``: ``userAccountControl`` with ACCOUNTDISABLE (514 is a
    disabled normal account) disables the user; an expired password, or ``pwdLastSet`` 0 (must
    change), asks for UPDATE_PASSWORD. Enabling the user here writes the flag back (WRITABLE)."""

    attributes = ("userAccountControl", "pwdLastSet")

    def read(self, entry, out, realm):
        raw = text(entry, "userAccountControl")
        if raw.isdigit():
            control = int(raw)
            out.fields["enabled"] = not control & ACCOUNTDISABLE
            if control & PASSWORD_EXPIRED:
                out.required_actions.append(UPDATE_PASSWORD)
        if text(entry, "pwdLastSet") == "0":
            out.required_actions.append(UPDATE_PASSWORD)

    def write(self, user, attrs):
        attrs["userAccountControl"] = [str(512 if user.enabled else 514)]


MAPPERS = {
    "user-attribute-ldap-mapper": UserAttribute,
    "certificate-ldap-mapper": Certificate,
    "full-name-ldap-mapper": FullName,
    "hardcoded-ldap-attribute-mapper": HardcodedLdapAttribute,
    "hardcoded-attribute-mapper": HardcodedAttribute,
    "hardcoded-ldap-role-mapper": HardcodedRole,
    "hardcoded-ldap-group-mapper": HardcodedGroup,
    "group-ldap-mapper": membership_mappers.GroupMembership,
    "role-ldap-mapper": membership_mappers.RoleMembership,
    "msad-user-account-control-mapper": AccountControl,
}


def mappers_of(component, provider_config):
    rows = Component.objects.filter(realm_id=component.realm_id, provider_type=MAPPER_TYPE, parent_id=component.pk)
    return [MAPPERS[m.provider_id](m, provider_config) for m in rows if m.provider_id in MAPPERS]


def validate(provider_id, config, parent_config):
    """Raise ConfigError for a mapper configuration that cannot be honoured (the mapper
    factories' validateConfiguration); ``parent_config`` is the provider's."""
    mapper = MAPPERS.get(provider_id)
    if mapper is not None and issubclass(mapper, membership.Membership):
        mapper.validate(config, parent_config)


def default_mappers(config):
    """The mappers Keycloak gives a new LDAP provider (LDAPStorageProviderFactory.onCreate):
    [(name, provider id, config)]."""
    read_only = str(config.edit_mode != "WRITABLE").lower()
    always_read = str(config.edit_mode in ("READ_ONLY", "WRITABLE")).lower()

    def attr(model, ldap_attr, read_only=read_only, always=always_read, mandatory="true"):
        return ("user-attribute-ldap-mapper", {
            "user.model.attribute": [model], "ldap.attribute": [ldap_attr], "read.only": [read_only],
            "always.read.value.from.ldap": [always], "is.mandatory.in.ldap": [mandatory]})

    mappers = [("username", *attr("username", config.username_attr, always="false"))]
    if config.rdn_attr.lower() == "cn":  # Active Directory's usual layout
        if config.username_attr.lower() == "cn":
            mappers.append(("first name", *attr("firstName", "givenName")))
        elif config.edit_mode == "WRITABLE":
            mappers += [("first name", *attr("firstName", "givenName")),
                        ("username-cn", *attr("username", "cn", always="false"))]
        else:
            mappers.append(("full name", "full-name-ldap-mapper", {
                "ldap.full.name.attribute": ["cn"], "read.only": [read_only], "write.only": ["false"]}))
    else:
        mappers.append(("first name", *attr("firstName", "cn")))
    created, modified = ("whenCreated", "whenChanged") if config.is_ad else ("createTimestamp", "modifyTimestamp")
    mappers += [
        ("last name", *attr("lastName", "sn")),
        ("email", *attr("email", "mail", always="false", mandatory="false")),
        ("creation date", *attr("createTimestamp", created, read_only="true", mandatory="false")),
        ("modify date", *attr("modifyTimestamp", modified, read_only="true", mandatory="false")),
    ]
    if config.is_ad:
        mappers.append(("MSAD account controls", "msad-user-account-control-mapper", {}))
    if not config.is_ad and config.sync_registrations and config.password_modify_op:
        # A registered user's entry needs some password before the password-modify operation sets theirs.
        mappers.append(("random initial password", "hardcoded-ldap-attribute-mapper", {
            "ldap.attribute.name": ["userPassword"], "ldap.attribute.value": [RANDOM]}))
    return mappers


def find_role(realm, name):
    client_id, _, role = name.rpartition(".")
    query = Role.objects.filter(realm=realm, name=role or name)
    return (query.filter(client__client_id=client_id) if client_id else query.filter(client__isnull=True)).first()
