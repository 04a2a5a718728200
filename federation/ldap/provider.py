"""The LDAP user storage provider (Keycloak's LDAPStorageProvider) on ``realms.users.storage``'s
interface. Users are imported as ``User`` rows linked to the component (``federation_link``) with
Keycloak's ``LDAP_ID`` and ``LDAP_ENTRY_DN`` attributes; their passwords never are: a bind checks
them, the password-modify extended operation (Active Directory: ``unicodePwd``) changes them.

With Import Users off the row is a cache of the entry, read again from the directory when the
provider's cache policy says so (``refresh``); with it on, the full and changed-users syncs keep
rows current and a sign-in reads nothing but the bind."""
import logging
from datetime import datetime

import ldap
import ldap.filter
import ldap.modlist
from django.db import transaction
from django.utils import timezone

from realms.credentials import password_policy
from realms.models import Credential, User, new_id
from realms.users import actions
from realms.users.storage import KERBEROS, REALM_DATABASE, Unavailable, UserStorageProvider, open_config

from ..kerberos.config import KERBEROS_PRINCIPAL
from . import mappers as mapping
from . import membership, rows
from .config import LDAP_ENTRY_DN, LDAP_ID, READ_ONLY, UNSYNCED, WRITABLE, ConfigError, LdapConfig
from .connection import Directory, DirectoryError, DirectoryUnavailable, refusal

logger = logging.getLogger("idp.federation")
CACHED_AT = "LDAP_CACHED_AT"  # import off: when the row was last read from the directory
def _attr_list(values):
    return [v.encode() for v in values if v]


class LdapProvider(UserStorageProvider):
    def __init__(self, component):
        self.component = component
        self.config = LdapConfig.of(component, open_config(component).get("bindCredential", [""])[0])
        self.directory = Directory(self.config)
        self.mappers = mapping.mappers_of(component, self.config)

    # -- reading entries -----------------------------------------------------------------------

    def _read_attrs(self):
        names = {self.config.username_attr, self.config.uuid_attr, self.config.rdn_attr, "modifyTimestamp"}
        for m in self.mappers:
            names.update(a for a in m.attributes if a)
        if self.config.allow_kerberos and self.config.kerberos_principal_attr:
            names.add(self.config.kerberos_principal_attr)
        return sorted(names)

    def _search(self, condition, size_limit=0):
        try:
            return self.directory.search(self.config.users_dn, self.config.user_filter(condition), self._read_attrs(),
                                         size_limit=size_limit)
        except ldap.SIZELIMIT_EXCEEDED:
            return []
        except DirectoryUnavailable as exc:
            logger.warning("LDAP provider %s: directory unavailable: %s", self.component.pk, exc)
            raise Unavailable(self.component.pk) from None

    def _by(self, attr, value):
        entries = self._search(f"({attr}={ldap.filter.escape_filter_chars(value)})", size_limit=2)
        return entries[0] if len(entries) == 1 else None

    def _email_attr(self):
        return next((m.ldap_attr for m in self.mappers
                     if isinstance(m, mapping.UserAttribute) and m.model_attr == "email"), "mail")

    # -- UserStorageProvider -------------------------------------------------------------------

    def get_user_by_id(self, realm, user_id):
        return User.objects.filter(realm=realm, pk=user_id, federation_link=self.component).first()

    def get_user_by_username(self, realm, username):
        entry = self._by(self.config.username_attr, username)
        return self._import_one(realm, entry)

    def get_user_by_email(self, realm, email):
        entry = self._by(self._email_attr(), email)
        return self._import_one(realm, entry)

    def search(self, realm, query, first=0, max_results=100):
        value = ldap.filter.escape_filter_chars(query)
        terms = "".join(f"({attr}=*{value}*)" for attr in (self.config.username_attr, self._email_attr(), "cn", "sn"))
        condition = f"(|{terms})"
        entries = self._search(condition)[first:first + max_results]
        return self.import_entries(realm, entries)

    def refresh(self, realm, user):
        """``user`` as the directory has it now when its cached row is stale (import off and the
        cache policy says so); None when the entry is gone."""
        if self.config.import_enabled:
            return self._read_live(realm, user)
        cached = (user.attributes or {}).get(CACHED_AT) or []
        try:
            until = self.config.cached_until(datetime.fromisoformat(cached[0])) if cached else timezone.now()
        except ValueError:
            until = timezone.now()  # an unreadable stamp: read the entry again
        if until is None or until > timezone.now():
            return self._read_live(realm, user)
        entry = self._by(self.config.uuid_attr, (user.attributes.get(LDAP_ID) or [""])[0])
        if entry is None:
            user.delete()  # the row was only a cache of an entry that no longer exists
            return None
        return self._import_one(realm, entry)

    def _read_live(self, realm, user):
        """What Keycloak reads from the entry at every use of a user found here: the account state
        of Active Directory's account-control mapper (the entry is imported again: a user disabled
        there is disabled here at once) and the memberships of the READ_ONLY and LDAP_ONLY group
        and role mappers."""
        account_state = any(isinstance(m, mapping.AccountControl) for m in self.mappers)
        live = [m for m in self.mappers if isinstance(m, membership.Membership) and m.base
                and m.mode != membership.IMPORT]
        dn = (user.attributes.get(LDAP_ENTRY_DN) or [""])[0]
        if not (live or account_state) or not dn:
            return user
        try:
            entries = self.directory.search(dn, "(objectClass=*)", self._read_attrs(), scope=ldap.SCOPE_BASE)
        except ldap.NO_SUCH_OBJECT:
            return user
        except DirectoryUnavailable:
            raise Unavailable(self.component.pk) from None
        if account_state:
            return self._import_one(realm, entries[0]) if entries else user
        entries = [(dn, {k.lower(): v for k, v in entry.items()}) for _, entry in entries[:1]]
        with transaction.atomic():
            self._mirror(realm, self._memberships(entries, live), [(user.pk, dn, False)])
        return user

    def validate(self, realm, user, credential_type, secret):
        if credential_type != Credential.PASSWORD:
            return False
        if self.config.edit_mode == UNSYNCED and user.has_usable_password():
            return REALM_DATABASE.validate(realm, user, credential_type, secret)  # changed here, kept here
        if self.config.allow_kerberos and self.config.use_kerberos_for_password:
            return self._kdc_accepts(user, secret)
        dn = (user.attributes.get(LDAP_ENTRY_DN) or [""])[0]
        try:
            return bool(dn) and self.directory.check_password(dn, secret)
        except DirectoryUnavailable as exc:
            logger.warning("LDAP provider %s: directory unavailable: %s", self.component.pk, exc)
            raise Unavailable(self.component.pk) from None

    def _kdc_accepts(self, user, secret):
        """The password checked by the KDC (useKerberosForPasswordAuthentication): the user's
        principal, or their name in the provider's Kerberos realm (Keycloak's fallback)."""
        try:
            from ..kerberos import gss
        except ImportError as exc:  # python-gssapi missing (the ``kerberos`` extra): no KDC to ask
            logger.warning("LDAP provider %s: Kerberos is not available on this server: %s", self.component.pk, exc)
            raise Unavailable(self.component.pk) from None
        principal = ((user.attributes or {}).get(KERBEROS_PRINCIPAL) or [user.username])[0]
        if "@" not in principal:
            principal = f"{principal}@{self.config.kerberos_realm}"
        try:
            return bool(secret) and gss.check_password(principal, secret, debug=self.config.debug)
        except gss.KerberosUnavailable as exc:
            logger.warning("LDAP provider %s: the KDC could not be asked: %s", self.component.pk, exc)
            raise Unavailable(self.component.pk) from None

    def is_configured_for(self, realm, user, credential_type):
        return credential_type == Credential.PASSWORD

    def authenticate_credential(self, realm, credential_type, value):
        """An SPNEGO token, when Kerberos authentication is allowed (Keycloak's
        LDAPStorageProvider.authenticate)."""
        if credential_type != KERBEROS or not self.config.allow_kerberos:
            return None
        try:
            from ..kerberos.provider import authenticate_spnego
        except ImportError as exc:  # python-gssapi missing: the step stands aside for the form
            logger.warning("LDAP provider %s: Kerberos is not available on this server: %s", self.component.pk, exc)
            return None
        return authenticate_spnego(realm, value, self.config, self.component.name, self.user_of_principal)

    def user_of_principal(self, realm, principal):
        """The user of a principal a ticket proved: the entry whose ``krbPrincipalAttribute`` is
        that principal or, without one, whose username is its name in the provider's Kerberos
        realm. A user of another store is never taken over."""
        attr = self.config.kerberos_principal_attr
        if attr:
            entry = self._by(attr, principal)
        else:
            name, _, kerberos_realm = principal.rpartition("@")
            if kerberos_realm != self.config.kerberos_realm or not name:
                return None
            entry = self._by(self.config.username_attr, name)
        return self._import_one(realm, entry)

    def update_credential(self, realm, user, credential_type, secret):
        if credential_type != Credential.PASSWORD:
            return REALM_DATABASE.update_credential(realm, user, credential_type, secret)
        if self.config.edit_mode == UNSYNCED:
            return REALM_DATABASE.update_credential(realm, user, credential_type, secret)
        if self.config.edit_mode == READ_ONLY:
            return False  # storage.set_password answers Keycloak's read-only message
        if self.config.validate_password_policy:
            password_policy.validate(user, secret)  # the realm's policy too, before the directory's
        dn = user.attributes[LDAP_ENTRY_DN][0]
        try:
            self.directory.set_password(dn, secret)
            if any(isinstance(m, mapping.AccountControl) for m in self.mappers):
                # Active Directory's "changed now": the must-change state (pwdLastSet 0) ends.
                self.directory.modify(dn, [(ldap.MOD_REPLACE, "pwdLastSet", [b"-1"])])
        except DirectoryUnavailable:
            raise Unavailable(self.component.pk) from None
        except DirectoryError as exc:
            # The directory's own words (its password policy), as Keycloak shows them.
            raise password_policy.PasswordPolicyError("invalidPasswordGenericMessage",
                                                      f"Invalid password: {exc.info or exc}") from None
        return True

    # -- import --------------------------------------------------------------------------------

    def import_entries(self, realm, entries):
        """The users of ``entries`` (imported or brought up to date), in the entries' order."""
        ids = self.import_page(realm, entries).ids
        users = {u.pk: u for u in User.objects.filter(pk__in=ids)}
        return [users[pk] for pk in ids if pk in users]

    def _import_one(self, realm, entry):
        users = self.import_entries(realm, [entry]) if entry else []
        return users[0] if users else None

    def import_page(self, realm, entries):
        """Create or update the users of ``entries`` ([(dn, attrs)]) in one transaction;
        idempotent (a user is found again by name). The result counts them and has their ids."""
        result = ImportResult()
        if not entries:
            return result
        entries = [(dn, {k.lower(): v for k, v in entry.items()}) for dn, entry in entries]  # names ignore case
        imported = [(dn, entry, self._map(realm, dn, entry)) for dn, entry in entries]
        memberships = self._memberships(entries)
        cached_at = [timezone.now().isoformat()]
        new_user_actions = actions.default_required_actions(realm)
        with transaction.atomic():
            found = rows.existing(realm, [i.fields.get("username", "") for _, _, i in imported])
            new, changed, grants, users = [], [], [], []
            for dn, entry, i in imported:
                username = i.fields.get("username")
                row = found.get(username)
                if not username or (row is not None and row["federation_link_id"] != self.component.pk):
                    if username:
                        logger.warning("LDAP provider %s: %s exists as a user of another store; not imported",
                                       self.component.pk, username)
                    result.failed += 1
                    continue
                values = {"username": username, "email": "", "email_verified": False, "first_name": "",
                          "last_name": "", "enabled": True}
                if row is not None:
                    values = {k: row[k] for k in rows.FIELDS}
                values.update(i.fields)
                attributes = dict(values.get("attributes") or {}, **i.attributes)
                attributes[LDAP_ID] = [membership.text(entry, self.config.uuid_attr)]
                attributes[LDAP_ENTRY_DN] = [dn]
                if not self.config.import_enabled:
                    attributes[CACHED_AT] = cached_at
                if self.config.allow_kerberos and self.config.kerberos_principal_attr:
                    principal = membership.text(entry, self.config.kerberos_principal_attr)
                    if principal:
                        attributes[KERBEROS_PRINCIPAL] = [principal]
                values["attributes"] = attributes
                if self.config.trust_email and values.get("email"):
                    values["email_verified"] = True
                values["required_actions"] = sorted(set(values.get("required_actions") or []) | set(i.required_actions))
                if row is None:  # a new user: the realm's default role and actions, as Keycloak's addUser
                    values["id"] = new_id()
                    values["required_actions"] = sorted(set(values["required_actions"]) | set(new_user_actions))
                    new.append(values)
                elif any(row[k] != values[k] for k in rows.FIELDS):
                    changed.append((row["id"], values))
                else:
                    result.unchanged += 1
                user_id = values.get("id") or row["id"]
                result.ids.append(user_id)
                users.append((user_id, dn, row is None))
                if i.roles or i.groups:
                    grants.append((user_id, i))
            rows.insert(realm, self.component, new)
            if realm.default_role_id and new:
                rows.grant(realm.default_role_id, [v["id"] for v in new])
            rows.update(changed)
            self._grant(realm, grants)
            self._mirror(realm, memberships, users)
        result.added, result.updated = len(new), len(changed)
        return result

    def _map(self, realm, dn, entry):
        out = mapping.Imported()
        out.fields["username"] = membership.text(entry, self.config.username_attr).lower()
        for m in self.mappers:
            m.read(entry, out, realm)
        return out

    def _memberships(self, entries, mappers=None):
        """{mapper: {user dn: [directory entries]}} of the group and role mappers."""
        found = {}
        for m in self.mappers if mappers is None else mappers:
            if isinstance(m, membership.Membership) and m.base:
                try:
                    found[m] = m.entries_of(self.directory, entries)
                except DirectoryUnavailable:
                    raise Unavailable(self.component.pk) from None
        return found

    def _grant(self, realm, grants):
        """The hardcoded mappers' roles and groups: [(user id, Imported)]."""
        user_roles, user_groups = [], []
        for user_id, imported in grants:
            roles = [r for r in (mapping.find_role(realm, n) for n in imported.roles) if r]
            groups = [g for g in (membership.find_group(realm, p) for p in imported.groups) if g]
            user_roles += [User.roles.through(user_id=user_id, role_id=r.pk) for r in roles]
            user_groups += [User.groups.through(user_id=user_id, group_id=g.pk) for g in groups]
        User.roles.through.objects.bulk_create(user_roles, ignore_conflicts=True)
        User.groups.through.objects.bulk_create(user_groups, ignore_conflicts=True)

    def _mirror(self, realm, found, users):
        """The group and role mappers' memberships of ``users`` ([(id, dn, new)]): IMPORT copies
        them for new users only; READ_ONLY and LDAP_ONLY make the memberships of groups/roles
        the directory has match it (those only the realm has are kept)."""
        for m, by_dn in found.items():
            chosen = [(user_id, dn) for user_id, dn, new in users if new or m.mode != membership.IMPORT]
            if not chosen:
                continue
            entries = [e for _, dn in chosen for e in by_dn.get(dn, ())]
            try:
                targets = m.realm_targets(self.directory, realm, entries)
                names = {dn: [membership.text(e, m.name_attr) for _, e in by_dn.get(dn, ())] for _, dn in chosen}
                wanted = {user_id: {targets[n].pk for n in names[dn] if n in targets} for user_id, dn in chosen}
                through, column = ((User.groups.through, "group_id") if m.kind == "groups"
                                   else (User.roles.through, "role_id"))
                through.objects.bulk_create([through(user_id=u, **{column: t}) for u, ts in wanted.items() for t in ts],
                                            ignore_conflicts=True)
                if m.mode == membership.IMPORT:
                    continue
                stale = [(u, t, name) for u, current in m.managed_of_users(realm, list(wanted)).items()
                         for t, name in current.items() if t not in wanted[u]]
                in_directory = m.existing_names(self.directory, sorted({name for _, _, name in stale}))
                for u, t, name in stale:
                    if name in in_directory:
                        through.objects.filter(user_id=u, **{column: t}).delete()
            except DirectoryUnavailable:
                raise Unavailable(self.component.pk) from None
            except membership.MembershipError as exc:
                logger.warning("LDAP mapper %s: %s", m.component.pk, exc)

    # -- writing to the directory --------------------------------------------------------------

    def entry_attrs(self, user, read_only_too=False):
        """The directory attributes the mappers make of ``user`` (those of read-only mappers only
        when asked: READ_ONLY's check of what a change would touch)."""
        attrs = {}
        for m in self.mappers:
            if (read_only_too or not m.read_only) and not m.creates_only:
                m.write(user, attrs)
        return attrs

    def register(self, realm, user):
        """Create ``user``'s entry (WRITABLE with sync registrations) and link the user to it."""
        attrs = {}
        for m in self.mappers:
            m.write(user, attrs)
        attrs = {k: v for k, v in attrs.items() if v}
        attrs.setdefault(self.config.username_attr, [user.username])
        attrs.setdefault(self.config.rdn_attr, [user.username])
        if "sn" not in attrs and not self.config.is_ad:
            attrs["sn"] = [user.last_name or user.username]  # inetOrgPerson requires it
        if "cn" not in attrs:
            attrs["cn"] = [" ".join(x for x in (user.first_name, user.last_name) if x) or user.username]
        attrs["objectClass"] = list(self.config.object_classes)
        dn = f"{self.config.rdn_attr}={ldap.dn.escape_dn_chars(attrs[self.config.rdn_attr][0])},{self.config.users_dn}"
        try:
            self.directory.add(dn, ldap.modlist.addModlist({k: _attr_list(v) for k, v in attrs.items()}))
            entry = self.directory.search(dn, "(objectClass=*)", [self.config.uuid_attr], scope=ldap.SCOPE_BASE)
        except DirectoryUnavailable:
            raise Unavailable(self.component.pk) from None
        except ldap.LDAPError as exc:
            raise refusal("Could not create user", exc) from None
        user.federation_link = self.component
        uuid = {k.lower(): v for k, v in entry[0][1].items()}
        user.attributes = dict(user.attributes or {}, **{LDAP_ID: [membership.text(uuid, self.config.uuid_attr)],
                                                         LDAP_ENTRY_DN: [dn]})

    def write_back(self, user, before):
        """The directory's side of a changed user (WRITABLE): the mapped values that differ."""
        new, old = self.entry_attrs(user), self.entry_attrs(before)
        changes = [(ldap.MOD_REPLACE, k, _attr_list(v) or None) for k, v in new.items() if v != old.get(k)]
        changes = [c for c in changes if c[2] is not None or old.get(c[1])]
        if not changes:
            return
        try:
            self.directory.modify(user.attributes[LDAP_ENTRY_DN][0], changes)
        except DirectoryUnavailable:
            raise Unavailable(self.component.pk) from None
        except ldap.LDAPError as exc:  # the entry as the directory's schema refuses it: nothing changes here
            raise refusal("Could not update user!", exc) from None

    def remove_user(self, realm, user):
        """WRITABLE: the entry is deleted too, or the next sync would bring the user back
        (Keycloak's removeUser); the other modes keep it."""
        dn = ((user.attributes or {}).get(LDAP_ENTRY_DN) or [""])[0]
        if not self.writable or not dn:
            return
        try:
            self.directory.delete(dn)
        except ldap.NO_SUCH_OBJECT:
            pass  # already gone from the directory
        except DirectoryUnavailable:
            raise Unavailable(self.component.pk) from None
        except ldap.LDAPError as exc:
            raise refusal("User couldn't be deleted", exc) from None

    def changes_directory_fields(self, user, before):
        return self.entry_attrs(user, True) != self.entry_attrs(before, True)

    @property
    def writable(self):
        return self.config.edit_mode == WRITABLE


def provider_for(component):
    """The factory registered in ``realms.users.storage``: None (the provider is unavailable, its users
    refused) when the stored configuration cannot work."""
    try:
        return LdapProvider(component)
    except ConfigError as exc:
        logger.warning("LDAP provider %s is misconfigured (%s): unavailable", component.pk, exc)
        return None


class ImportResult:
    def __init__(self):
        self.ids, self.added, self.updated, self.unchanged, self.failed = [], 0, 0, 0, 0
