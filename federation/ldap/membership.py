"""Keycloak's ``group-ldap-mapper`` and ``role-ldap-mapper`` (GroupLDAPStorageMapper,
RoleLDAPStorageMapper): directory groups (or role entries) whose members are users of the
provider, mapped to realm groups (under ``groups.path``, nested when ``preserve.group.inheritance``)
or to realm or client roles.

The realm keeps memberships in its own tables, so the modes (LDAPGroupMapperMode) work on those:
- ``IMPORT``: the directory's memberships are copied when a user is first imported; afterwards
  the realm's own (changes stay here).
- ``READ_ONLY``: every read of the user's entry (sign-in, search, sync) makes the memberships of
  mapped groups/roles that exist in the directory match it; joining or leaving such a group here
  is refused.
- ``LDAP_ONLY``: as READ_ONLY, and joining or leaving here writes the directory's member
  attribute (creating the directory group when missing).
Both sync directions are the mapper actions of the Admin API (``sync_to_realm``, ``sync_to_directory``).
This module holds what both mappers share (``Membership``); the two are in ``membership_mappers``."""
import logging

import ldap
import ldap.dn
import ldap.filter

from realms.models import Group

from ..errors import FederationError
from .config import LDAP_ENTRY_DN, ConfigError, search_filter

logger = logging.getLogger("idp.federation")

LDAP_ONLY, READ_ONLY, IMPORT = "LDAP_ONLY", "READ_ONLY", "IMPORT"
MODES = (LDAP_ONLY, READ_ONLY, IMPORT)
DN, UID = "DN", "UID"
# LDAPConstants.EMPTY_MEMBER_ATTRIBUTE_VALUE: groupOfNames needs a member even when it has none.
EMPTY_MEMBER = "cn=empty-membership-placeholder"
IN_CHAIN = "1.2.840.113556.1.4.1941"  # Active Directory's LDAP_MATCHING_RULE_IN_CHAIN


class MembershipError(FederationError):
    """A membership change or sync this mapper refuses (Keycloak's ModelException)."""


def _get(config, name, default=""):
    values = config.get(name) or []
    return values[0] if values and values[0] is not None and values[0] != "" else default


def _flag(config, name, default):
    value = _get(config, name, "true" if default else "false").strip().lower()
    if value not in ("true", "false"):
        raise ConfigError(f"{name} must be true or false")
    return value == "true"


def _names(value):
    return [x.strip() for x in value.split(",") if x.strip()]


def text(entry, name):
    """The first value of an attribute, decoded, or '' (``entry``'s names in lower case, as
    ``Provider.import_page`` gives them)."""
    values = entry.get(name.lower())
    return values[0].decode("utf-8", "replace") if values else ""


def texts(entry, name):
    return [v.decode("utf-8", "replace") for v in entry.get(name.lower(), ())]


def find_group(realm, path):
    """The realm group at ``path`` ("/a/b"), or None."""
    group = None
    for part in [p for p in path.split("/") if p]:
        group = Group.objects.filter(realm=realm, parent=group, name=part).first()
        if group is None:
            return None
    return group


def _lower(entry):
    return {k.lower(): v for k, v in entry.items()}


def _norm(dn):
    try:
        return ldap.dn.dn2str(ldap.dn.str2dn(dn)).lower()
    except ldap.DECODING_ERROR:
        return dn.lower()


def _first_rdn(dn, attr):
    """The value of ``attr`` in the first RDN of ``dn`` ('' when the RDN is another attribute)."""
    try:
        rdn = ldap.dn.str2dn(dn)[0]
    except (ldap.DECODING_ERROR, IndexError):
        return ""
    return next((value for name, value, _ in rdn if name.lower() == attr.lower()), "")


class Membership:
    """The settings shared by both mappers (CommonLDAPGroupMapperConfig), read from the mapper's
    config; ``validate`` refuses what cannot work, as the factories' validateConfiguration."""

    kind = ""  # "groups" or "roles"
    creates_only = False
    read_only = True  # never part of the user's own entry

    def __init__(self, component, provider_config):
        self.component = component
        c = component.config
        singular = self.kind[:-1]
        self.base = _get(c, f"{self.kind}.dn")
        self.name_attr = _get(c, f"{singular}.name.ldap.attribute", "cn")
        self.object_classes = _names(_get(c, f"{singular}.object.classes",
                                          "group" if provider_config.is_ad else "groupOfNames"))
        self.custom_filter = _get(c, f"{self.kind}.ldap.filter").strip()
        relative = _get(c, f"{self.kind}.relative.create.dn").strip().rstrip(",")
        self.create_base = f"{relative},{self.base}" if relative else self.base
        self.member_attr = _get(c, "membership.ldap.attribute", "member")
        self.membership_type = _get(c, "membership.attribute.type", DN).upper()
        self.user_attr = _get(c, "membership.user.ldap.attribute", provider_config.username_attr)
        self.mode = _get(c, "mode", READ_ONLY).upper()
        noun = self.kind.upper()
        self.strategy = _get(c, "user.roles.retrieve.strategy", f"LOAD_{noun}_BY_MEMBER_ATTRIBUTE").upper()
        self.member_of_attr = _get(c, "memberof.ldap.attribute", "memberOf")
        self.subtree = provider_config.subtree
        self.provider_config = provider_config

    @classmethod
    def validate(cls, config, parent_config):
        """Raise ConfigError for a configuration this mapper cannot honour."""
        singular = cls.kind[:-1]
        if not _get(config, f"{cls.kind}.dn"):
            raise ConfigError(f"LDAP {cls.kind.capitalize()} DN is required ({cls.kind}.dn)")
        mode = _get(config, "mode").upper()
        if not mode:
            raise ConfigError("Mode is required (mode)")
        if mode not in MODES:
            raise ConfigError(f"mode must be one of {', '.join(MODES)}")
        if mode == IMPORT and not _flag(parent_config or {}, "importEnabled", True):
            raise ConfigError("mode IMPORT needs the provider's Import Users on (LDAP_ONLY or READ_ONLY without it)")
        if _get(config, "membership.attribute.type", DN).upper() not in (DN, UID):
            raise ConfigError("membership.attribute.type must be DN or UID")
        custom = _get(config, f"{cls.kind}.ldap.filter").strip()
        if custom and not (custom.startswith("(") and custom.endswith(")")):
            raise ConfigError("ldapErrorInvalidCustomFilter")
        noun = cls.kind.upper()
        strategies = (f"LOAD_{noun}_BY_MEMBER_ATTRIBUTE", f"GET_{noun}_FROM_USER_MEMBEROF_ATTRIBUTE",
                      f"LOAD_{noun}_BY_MEMBER_ATTRIBUTE_RECURSIVELY")
        strategy = _get(config, "user.roles.retrieve.strategy", strategies[0]).upper()
        if strategy not in strategies:
            raise ConfigError(f"user.roles.retrieve.strategy must be one of {', '.join(strategies)}")
        vendor = _get(parent_config or {}, "vendor", "other").lower()
        if strategy == strategies[2] and vendor != "ad":
            raise ConfigError(f"{strategies[2]} works with Active Directory only (LDAP_MATCHING_RULE_IN_CHAIN)")
        for name in (f"{singular}.name.ldap.attribute", "membership.ldap.attribute"):
            if name in config and not _get(config, name):
                raise ConfigError(f"{name} must not be empty")
        cls._validate_kind(config)

    @classmethod
    def _validate_kind(cls, config):
        pass

    # -- the directory side ------------------------------------------------------------------

    def _filter(self, condition=""):
        return search_filter(self.object_classes, self.custom_filter, condition)

    def _scope(self):
        # Keycloak searches group trees with the provider's own search scope.
        return ldap.SCOPE_SUBTREE if self.subtree else ldap.SCOPE_ONELEVEL

    def entry_attrs(self):
        return [self.name_attr, self.member_attr]

    def search(self, directory, condition=""):
        """[(dn, attrs lower-cased)] of the mapper's directory entries matching ``condition``."""
        return [(dn, _lower(a)) for dn, a in directory.search(self.base, self._filter(condition), self.entry_attrs(),
                                                              scope=self._scope())]

    def by_name(self, directory, name):
        found = self.search(directory, f"({self.name_attr}={ldap.filter.escape_filter_chars(name)})")
        return found[0] if found else None

    def read(self, entry, out, realm):
        pass  # memberships are looked up a page of entries at a time (``entries_of``)

    def write(self, user, attrs):
        pass  # never part of the user's own entry

    @property
    def attributes(self):
        """The user entry's attributes this mapper reads."""
        names = []
        if self.membership_type == UID:
            names.append(self.user_attr)
        if self.strategy.startswith("GET_"):
            names.append(self.member_of_attr)
        return names

    def member_value(self, dn, entry):
        return text(entry, self.user_attr) if self.membership_type == UID else dn

    def entries_of(self, directory, users):
        """{user dn: [(entry dn, entry)]} of the directory entries listing each of ``users``
        ([(dn, entry)]): one search for the page by the member attribute, the users' own
        ``memberof.ldap.attribute``, or (Active Directory) one in-chain search per user."""
        found = {}
        if self.strategy.startswith("GET_"):
            base = _norm(self.base)
            for dn, entry in users:
                for group_dn in texts(entry, self.member_of_attr):
                    name = _first_rdn(group_dn, self.name_attr)
                    if name and _norm(group_dn).endswith("," + base):
                        found.setdefault(dn, []).append((group_dn, {self.name_attr.lower(): [name.encode()]}))
            return found
        if self.strategy.endswith("_RECURSIVELY"):
            for dn, _ in users:
                term = f"({self.member_attr}:{IN_CHAIN}:={ldap.filter.escape_filter_chars(dn)})"
                found[dn] = self.search(directory, term)
            return found
        values = {}
        for dn, entry in users:
            value = self.member_value(dn, entry)
            if value:
                values[value.lower() if self.membership_type == UID else _norm(value)] = dn
        if not values:
            return found
        terms = "".join(f"({self.member_attr}={ldap.filter.escape_filter_chars(v)})" for v in values)
        for group in self.search(directory, f"(|{terms})"):
            for member in texts(group[1], self.member_attr):
                dn = values.get(member.lower() if self.membership_type == UID else _norm(member))
                if dn:
                    found.setdefault(dn, []).append(group)
        return found

    def _user_member_value(self, directory, user):
        dn = (user.attributes.get(LDAP_ENTRY_DN) or [""])[0]
        if self.membership_type == DN or not dn:
            return dn
        if self.user_attr.lower() == self.provider_config.username_attr.lower():
            return user.username
        entries = directory.search(dn, "(objectClass=*)", [self.user_attr], scope=ldap.SCOPE_BASE)
        return text(_lower(entries[0][1]), self.user_attr) if entries else ""

    def _lists(self, entry, value):
        wanted = value.lower() if self.membership_type == UID else _norm(value)
        return any((m.lower() if self.membership_type == UID else _norm(m)) == wanted
                   for m in texts(entry, self.member_attr))

    def add_member(self, directory, entry_dn, entry, value):
        if self._lists(entry, value):
            return
        changes = [(ldap.MOD_ADD, self.member_attr, [value.encode()])]
        if any(_norm(m) == EMPTY_MEMBER for m in texts(entry, self.member_attr)):
            changes.append((ldap.MOD_DELETE, self.member_attr, [EMPTY_MEMBER.encode()]))
        directory.modify(entry_dn, changes)

    def remove_member(self, directory, entry_dn, entry, value):
        members = texts(entry, self.member_attr)
        keep = [m for m in members if (m.lower() if self.membership_type == UID else _norm(m))
                != (value.lower() if self.membership_type == UID else _norm(value))]
        if len(keep) == len(members):
            return
        if not keep and self.membership_type == DN:
            # groupOfNames must keep a member: Keycloak's placeholder.
            directory.modify(entry_dn, [(ldap.MOD_REPLACE, self.member_attr, [EMPTY_MEMBER.encode()])])
        else:
            removed = [m.encode() for m in members if m not in keep]
            directory.modify(entry_dn, [(ldap.MOD_DELETE, self.member_attr, removed)])

    def create_entry(self, directory, name, attributes=None):
        dn = f"{self.name_attr}={ldap.dn.escape_dn_chars(name)},{self.create_base}"
        attrs = {"objectClass": [o.encode() for o in self.object_classes], self.name_attr: [name.encode()]}
        if self.membership_type == DN:
            attrs[self.member_attr] = [EMPTY_MEMBER.encode()]
        for key, values in (attributes or {}).items():
            if values:
                attrs[key] = [v.encode() for v in values]
        directory.add(dn, list(attrs.items()))
        return dn, _lower(attrs)

    # -- the realm side ----------------------------------------------------------------------

    def manages(self, realm, target):
        raise NotImplementedError

    def realm_targets(self, directory, realm, entries):
        """{entry name: realm group/role} of directory ``entries`` (created when missing)."""
        raise NotImplementedError

    def managed_of_users(self, realm, user_ids):
        """{user id: {target id: name}} of the users' current memberships this mapper manages."""
        raise NotImplementedError

    def existing_names(self, directory, names):
        """Which of ``names`` are entries of this mapper in the directory."""
        if not names:
            return set()
        terms = "".join(f"({self.name_attr}={ldap.filter.escape_filter_chars(n)})" for n in names)
        return {text(e, self.name_attr) for _, e in self.search(directory, f"(|{terms})")}

    # -- membership changes made in the realm ------------------------------------------------

    def _check_mode(self, verb):
        if self.mode == READ_ONLY:
            raise MembershipError(f"Not possible to {verb} LDAP {self.kind[:-1]} mappings as mapper mode is READ_ONLY")

    def joining(self, directory, realm, user, target):
        """``user`` joins ``target`` here: written to the directory (LDAP_ONLY) or refused
        (READ_ONLY, when the directory has the group)."""
        if self.mode == IMPORT or not self.manages(realm, target):
            return
        entry = self.by_name(directory, target.name)
        if self.mode == READ_ONLY:
            if entry is not None:
                self._check_mode("add")
            return
        if entry is None:
            entry = self.ensure_entry(directory, realm, target)
        value = self._user_member_value(directory, user)
        if value:
            self.add_member(directory, entry[0], entry[1], value)

    def leaving(self, directory, realm, user, target):
        if self.mode == IMPORT or not self.manages(realm, target):
            return
        entry = self.by_name(directory, target.name)
        value = self._user_member_value(directory, user)
        if entry is None or not value or not self._lists(entry[1], value):
            return  # a membership only the realm had
        self._check_mode("delete")
        self.remove_member(directory, entry[0], entry[1], value)

    def ensure_entry(self, directory, realm, target):
        return self.create_entry(directory, target.name)

    @staticmethod
    def result(status, added=0, updated=0, removed=0, failed=0):
        """Keycloak's SynchronizationResult representation."""
        return {"ignored": False, "added": added, "updated": updated, "removed": removed, "failed": failed,
                "status": status.format(added, updated, removed)}
