"""The two membership mappers on ``membership.Membership``: Keycloak's ``group-ldap-mapper``
(``GroupMembership``: directory groups as realm groups, nested or flat) and ``role-ldap-mapper``
(``RoleMembership``: role entries as realm or client roles)."""
import logging

import ldap
import ldap.dn
import ldap.filter

from realms.models import Client, Group, Role

from .config import ConfigError
from .membership import (
    DN,
    EMPTY_MEMBER,
    LDAP_ONLY,
    Membership,
    MembershipError,
    _first_rdn,
    _flag,
    _get,
    _lower,
    _names,
    _norm,
    find_group,
    text,
    texts,
)

logger = logging.getLogger("idp.federation")


class GroupMembership(Membership):
    kind = "groups"

    def __init__(self, component, provider_config):
        super().__init__(component, provider_config)
        c = component.config
        # Subgroups are members by DN; with UID membership there are none to follow.
        self.inheritance = _flag(c, "preserve.group.inheritance", True) and self.membership_type == DN
        self.ignore_missing = _flag(c, "ignore.missing.groups", False)
        self.drop_missing = _flag(c, "drop.non.existing.groups.during.sync", False)
        self.groups_path = _get(c, "groups.path", "/").strip() or "/"
        self.mapped_attributes = _names(_get(c, "mapped.group.attributes"))
        self._synced = False

    @classmethod
    def _validate_kind(cls, config):
        if _flag(config, "preserve.group.inheritance", False) and _get(
                config, "membership.attribute.type", DN).upper() != DN:
            raise ConfigError("ldapErrorCantPreserveGroupInheritanceWithUIDMembershipType")
        for name in ("ignore.missing.groups", "drop.non.existing.groups.during.sync"):
            _flag(config, name, False)

    def entry_attrs(self):
        return [self.name_attr, self.member_attr, *self.mapped_attributes]

    def path_group(self, realm):
        """(found, group): the group of ``groups.path`` (None for "/")."""
        if self.groups_path == "/":
            return True, None
        group = find_group(realm, self.groups_path)
        return group is not None, group

    def _subtree(self, realm, root):
        """Every realm group under ``root`` (all of the realm's for the top level)."""
        groups = list(Group.objects.filter(realm=realm).only("id", "parent_id", "name", "attributes"))
        if root is None:
            return groups
        children = {}
        for g in groups:
            children.setdefault(g.parent_id, []).append(g)
        out, todo = [], [root.pk]
        while todo:
            for g in children.get(todo.pop(), ()):
                out.append(g)
                todo.append(g.pk)
        return out

    def manages(self, realm, target):
        if not isinstance(target, Group):
            return False
        found, root = self.path_group(realm)
        if not found:
            return False
        if root is None:
            return True
        node = target
        while node is not None:
            if node.pk == root.pk:
                return True
            node = node.parent
        return False

    def _attributes(self, entry):
        return {name: texts(entry, name) for name in self.mapped_attributes}

    def _set_attributes(self, group, entry):
        if not self.mapped_attributes:
            return False
        attributes = dict(group.attributes or {})
        for name, values in self._attributes(entry).items():
            if values:
                attributes[name] = values
            else:
                attributes.pop(name, None)
        if attributes == (group.attributes or {}):
            return False
        group.attributes = attributes
        group.save(update_fields=["attributes"])
        return True

    def realm_targets(self, directory, realm, entries):
        found, root = self.path_group(realm)
        if not found:
            logger.warning("LDAP group mapper %s: groups path %s does not exist", self.component.pk, self.groups_path)
            return {}
        out = {}
        tree = None
        for _, entry in entries:
            name = text(entry, self.name_attr)
            if not name or name in out:
                continue
            if self.inheritance:
                tree = tree if tree is not None else {g.name: g for g in self._subtree(realm, root)}
                group = tree.get(name)
                if group is None and not self._synced:
                    # A group not yet here: Keycloak brings the whole tree over once, then looks again.
                    self.sync_to_realm(directory, realm)
                    tree = {g.name: g for g in self._subtree(realm, root)}
                    group = tree.get(name)
                if group is None:
                    logger.warning("LDAP group mapper %s: group %s is not in the directory's tree",
                                   self.component.pk, name)
                    continue
            else:
                group = Group.objects.filter(realm=realm, parent=root, name=name).first()
                if group is None:
                    group = Group.objects.create(realm=realm, parent=root, name=name,
                                                 attributes={k: v for k, v in self._attributes(entry).items() if v})
            out[name] = group
        return out

    def managed_of_users(self, realm, user_ids):
        from realms.models import User

        found, root = self.path_group(realm)
        if not found:
            return {}
        managed = {g.pk: g.name for g in self._subtree(realm, root)}
        out = {}
        for user_id, group_id in User.groups.through.objects.filter(user_id__in=user_ids).values_list(
                "user_id", "group_id"):
            if group_id in managed:
                out.setdefault(user_id, {})[group_id] = managed[group_id]
        return out

    def ensure_entry(self, directory, realm, target):
        """The directory group of realm group ``target``, created (with its missing ancestors,
        nested as the realm has them when inheritance is preserved)."""
        dn, entry = self.create_entry(directory, target.name,
                                      {k: list((target.attributes or {}).get(k) or []) for k in self.mapped_attributes})
        _, root = self.path_group(realm)
        parent = target.parent
        if self.inheritance and parent is not None and (root is None or parent.pk != root.pk):
            parent_entry = self.by_name(directory, parent.name) or self.ensure_entry(directory, realm, parent)
            self.add_member(directory, parent_entry[0], parent_entry[1], dn)
        return dn, entry

    # -- sync --------------------------------------------------------------------------------

    def _tree(self, entries):
        """{parent name: [child names]} and the roots, from the directory groups' member DNs
        (GroupTreeResolver): a missing child group, a group with two parents or a cycle cannot
        be a realm group tree."""
        by_dn = {_norm(dn): text(e, self.name_attr) for dn, e in entries}
        names = set(by_dn.values())
        base = _norm(self.base)
        children, parents = {}, {}
        for _dn, entry in entries:
            name = text(entry, self.name_attr)
            for member in texts(entry, self.member_attr):
                m = _norm(member)
                if m == EMPTY_MEMBER or not m.endswith("," + base):
                    continue  # a user, or the placeholder: not a subgroup
                child = by_dn.get(m)
                if child is None:
                    if self.ignore_missing:
                        continue
                    raise MembershipError(f"The group '{_first_rdn(member, self.name_attr) or member}', member of "
                                          f"'{name}', does not exist in LDAP")
                if child in parents and parents[child] != name:
                    raise MembershipError(f"Group '{child}' detected to have multiple parents. This is not allowed "
                                          f"in Keycloak. Parents are: {sorted([parents[child], name])}")
                parents[child] = name
                children.setdefault(name, []).append(child)
        roots = sorted(n for n in names if n not in parents)
        seen, todo = set(), list(roots)
        while todo:
            n = todo.pop()
            seen.add(n)
            todo += children.get(n, [])
        if seen != names:
            raise MembershipError(f"Recursion detected when trying to resolve group tree: {sorted(names - seen)}")
        return children, roots

    def _all_entries(self, directory):
        return [(dn, _lower(a)) for dn, a in directory.search(self.base, self._filter(), self.entry_attrs(),
                                                              scope=self._scope())]

    def sync_to_realm(self, directory, realm):
        """"Sync LDAP groups to Keycloak": the directory's groups (nested as there when
        inheritance is preserved) created or updated under ``groups.path``; with
        ``drop.non.existing.groups.during.sync`` the path's other groups removed."""
        self._synced = True
        found, root = self.path_group(realm)
        if not found:
            raise MembershipError(f"Groups path {self.groups_path} does not exist")
        entries = self._all_entries(directory)
        by_name = {text(e, self.name_attr): e for _, e in entries if text(e, self.name_attr)}
        counts = {"added": 0, "updated": 0, "removed": 0}
        visited = set()

        def place(name, parent):
            group = Group.objects.filter(realm=realm, parent=parent, name=name).first()
            if group is None:
                group = Group.objects.create(realm=realm, parent=parent, name=name)
                self._set_attributes(group, by_name[name])
                counts["added"] += 1
            else:
                self._set_attributes(group, by_name[name])
                counts["updated"] += 1
            visited.add(group.pk)
            return group

        if self.inheritance:
            try:
                children, roots = self._tree(entries)
            except MembershipError as exc:
                raise MembershipError("Couldn't resolve groups from LDAP. Fix LDAP or skip preserve inheritance. "
                                      f"Details: {exc}") from None
            todo = [(name, root) for name in roots]
            while todo:
                name, parent = todo.pop()
                group = place(name, parent)
                todo += [(child, group) for child in children.get(name, [])]
        else:
            for name in sorted(by_name):
                place(name, root)
        if self.drop_missing:
            for group in self._subtree(realm, root):
                if group.pk not in visited and Group.objects.filter(pk=group.pk).exists():
                    counts["removed"] += 1 + len(self._subtree(realm, group))
                    Group.objects.filter(pk=group.pk).delete()
        return self.result("{0} imported groups, {1} updated groups, {2} removed groups", **counts)

    def sync_to_directory(self, directory, realm):
        """"Sync Keycloak groups to LDAP" (LDAP_ONLY): the path's groups created or updated in
        the directory, the directory's others removed when ``drop.non.existing...`` is on, and the
        realm's nesting written as member DNs when inheritance is preserved."""
        status = "{0} groups imported to LDAP, {1} groups updated to LDAP, {2} groups removed from LDAP"
        if self.mode != LDAP_ONLY:
            logger.warning("Ignored sync for federation mapper %s as its mode is %s", self.component.pk, self.mode)
            return self.result(status)
        found, root = self.path_group(realm)
        if not found:
            raise MembershipError(f"Groups path {self.groups_path} does not exist")
        entries = {text(e, self.name_attr): (dn, e) for dn, e in self._all_entries(directory)}
        groups = self._subtree(realm, root)
        counts = {"added": 0, "updated": 0, "removed": 0}
        for group in groups:
            attributes = {k: list((group.attributes or {}).get(k) or []) for k in self.mapped_attributes}
            if group.name in entries:
                dn, _ = entries[group.name]
                changes = [(ldap.MOD_REPLACE, k, [v.encode() for v in values] or None)
                           for k, values in attributes.items()]
                if changes:
                    directory.modify(dn, changes)
                counts["updated"] += 1
            else:
                entries[group.name] = self.create_entry(directory, group.name, attributes)
                counts["added"] += 1
        names = {g.name for g in groups}
        if self.drop_missing:
            for name in [n for n in entries if n not in names]:
                directory.delete(entries.pop(name)[0])
                counts["removed"] += 1
        if self.inheritance:
            group_dns = {_norm(dn) for dn, _ in entries.values()}
            for group in groups:
                dn, entry = entries[group.name]
                wanted = {_norm(entries[c.name][0]): entries[c.name][0] for c in groups if c.parent_id == group.pk}
                present = {_norm(m) for m in texts(entry, self.member_attr)}
                for key, child_dn in wanted.items():
                    if key not in present:
                        self.add_member(directory, dn, entry, child_dn)
                        entry = _lower(directory.search(dn, "(objectClass=*)", [self.member_attr],
                                                        scope=ldap.SCOPE_BASE)[0][1])
                for member in texts(entry, self.member_attr):
                    if _norm(member) in group_dns and _norm(member) not in wanted:
                        self.remove_member(directory, dn, entry, member)
                        entry = _lower(directory.search(dn, "(objectClass=*)", [self.member_attr],
                                                        scope=ldap.SCOPE_BASE)[0][1])
        return self.result(status, **counts)


class RoleMembership(Membership):
    kind = "roles"

    def __init__(self, component, provider_config):
        super().__init__(component, provider_config)
        c = component.config
        self.realm_roles = _flag(c, "use.realm.roles.mapping", True)
        self.client_id = _get(c, "client.id")

    @classmethod
    def _validate_kind(cls, config):
        if not _flag(config, "use.realm.roles.mapping", True) and not _get(config, "client.id"):
            raise ConfigError("Using client roles mapping is requested, but parameter client.id not found!")

    def client(self, realm):
        """(found, client): the roles' client (None: realm roles)."""
        if self.realm_roles:
            return True, None
        client = Client.objects.filter(realm=realm, client_id=self.client_id).first()
        if client is None:
            logger.warning("LDAP role mapper %s: no client %s in the realm", self.component.pk, self.client_id)
        return client is not None, client

    def manages(self, realm, target):
        if not isinstance(target, Role):
            return False
        found, client = self.client(realm)
        return found and target.client_id == (client.pk if client else None)

    def realm_targets(self, directory, realm, entries):
        found, client = self.client(realm)
        if not found:
            return {}
        out = {}
        for _, entry in entries:
            name = text(entry, self.name_attr)
            if name:
                out[name] = Role.objects.get_or_create(realm=realm, client=client, name=name)[0]
        return out

    def managed_of_users(self, realm, user_ids):
        from realms.models import User

        found, client = self.client(realm)
        if not found:
            return {}
        rows = User.roles.through.objects.filter(user_id__in=user_ids, role__client=client).values_list(
            "user_id", "role_id", "role__name")
        out = {}
        for user_id, role_id, name in rows:
            out.setdefault(user_id, {})[role_id] = name
        return out

    def sync_to_realm(self, directory, realm):
        """"Sync LDAP roles to Keycloak": a role of the realm (or client) for each directory entry."""
        status = "{0} imported roles, {1} roles already exists in Keycloak"
        found, client = self.client(realm)
        if not found:
            return self.result(status)
        counts = {"added": 0, "updated": 0}
        for _, entry in self.search(directory):
            name = text(entry, self.name_attr)
            if name:
                created = Role.objects.get_or_create(realm=realm, client=client, name=name)[1]
                counts["added" if created else "updated"] += 1
        return self.result(status, **counts)

    def sync_to_directory(self, directory, realm):
        """"Sync Keycloak roles to LDAP" (LDAP_ONLY): an entry for each role the directory lacks."""
        status = "{0} roles imported to LDAP, {1} roles already existed in LDAP"
        if self.mode != LDAP_ONLY:
            logger.warning("Ignored sync for federation mapper %s as its mode is %s", self.component.pk, self.mode)
            return self.result(status)
        found, client = self.client(realm)
        if not found:
            return self.result(status)
        present = {text(e, self.name_attr) for _, e in self.search(directory)}
        counts = {"added": 0, "updated": 0}
        for role in Role.objects.filter(realm=realm, client=client).order_by("name"):
            if role.name in present:
                counts["updated"] += 1
            else:
                self.create_entry(directory, role.name)
                counts["added"] += 1
        return self.result(status, **counts)
