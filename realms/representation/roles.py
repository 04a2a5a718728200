"""Realm and client roles with their composites, and scope mappings (roles granted to a client or
a client scope): fields, parsing, import and export."""
from ..models import Role
from .fields import (
    RepresentationError,
    as_composites,
    as_dict,
    as_list,
    as_multi_map,
    as_str,
    as_str_list,
    json_fields,
    model_fields,
    spec_of,
)

_ROLE_FIELDS = {
    "id": ("id", as_str),
    "name": ("name", as_str),
    "description": ("description", as_str),
    "attributes": ("attributes", as_multi_map),
}
# Keys Keycloak computes from other data.
_DERIVED = {"composite", "clientRole", "containerId"}


def parse_role(r, path, p):
    values = p.take(r, path, spec_of(_ROLE_FIELDS, {"composites": as_composites}), derived=_DERIVED,
                    required=("name",))
    return {
        "_path": path,
        "fields": model_fields(_ROLE_FIELDS, values),
        "composites": values.get("composites", {"realm": [], "client": {}}),
    }


def parse_roles(roles, p):
    values = p.take(roles, "roles", {"realm": as_list, "client": as_dict})
    realm = [parse_role(r, f"roles.realm[{i}]", p) for i, r in enumerate(values.get("realm", []))]
    client = {}
    for client_id, rows in values.get("client", {}).items():
        path = f"roles.client.{client_id}"
        client[client_id] = [parse_role(r, f"{path}[{i}]", p) for i, r in enumerate(as_list(rows, path))]
    return realm, client


def parse_scope_mapping(m, path, p):
    v = p.take(m, path, {"client": as_str, "clientScope": as_str, "clientTemplate": as_str, "roles": as_str_list},
               derived={"self"})
    if "clientTemplate" in v:  # Keycloak < 4 called client scopes client templates
        v.setdefault("clientScope", v.pop("clientTemplate"))
    if ("client" in v) == ("clientScope" in v):
        raise RepresentationError(path, "expected exactly one of client or clientScope")
    return {"_path": path, "client": v.get("client"), "scope": v.get("clientScope"), "roles": v.get("roles", [])}


def role_rep(role, container_id):
    comps = list(role.composites.all().select_related("client"))
    rep = {**json_fields(role, _ROLE_FIELDS), "composite": bool(comps), "clientRole": role.client_id is not None,
           "containerId": container_id}
    if comps:
        realm_names = sorted(c.name for c in comps if c.client_id is None)
        client = {}
        for c in comps:
            if c.client_id is not None:
                client.setdefault(c.client.client_id, []).append(c.name)
        rep["composites"] = {}
        if realm_names:
            rep["composites"]["realm"] = realm_names
        if client:
            rep["composites"]["client"] = {k: sorted(v) for k, v in sorted(client.items())}
    return rep


def role_names(roles):
    realm_names = sorted(r.name for r in roles if r.client_id is None)
    client = {}
    for r in roles:
        if r.client_id is not None:
            client.setdefault(r.client.client_id, []).append(r.name)
    return realm_names, {k: sorted(v) for k, v in sorted(client.items())}


class RoleApplier:
    """The importer's steps for roles and scope mappings (a part of importer._Applier)."""

    def realm_role(self, name, path, create=False):
        if name not in self.realm_roles and create:
            self.realm_roles[name] = self.created_role(name, None, path)
        try:
            return self.realm_roles[name]
        except KeyError:
            raise RepresentationError(path, f"unknown realm role {name!r}") from None

    def client_role(self, client_id, name, path, create=False):
        client = self.client(client_id, path)
        if (client_id, name) not in self.client_roles and create:
            self.client_roles[(client_id, name)] = self.created_role(name, client, path)
        try:
            return self.client_roles[(client_id, name)]
        except KeyError:
            raise RepresentationError(path, f"unknown role {name!r} of client {client_id!r}") from None

    def created_role(self, name, client, path):
        # Keycloak creates a role that a user, group or scope mapping names but the file does
        # not define (real exports rely on it); composites and the default role must exist.
        self.p.unsupported(path, f"role {name!r} is not defined in roles; created empty, as Keycloak does")
        return self.new_role({"_path": path, "fields": {"name": name}}, client)

    def roles_from(self, realm_names, client_map, path, realm_key="realmRoles", client_key="clientRoles",
                   create=False):
        roles = [self.realm_role(n, f"{path}.{realm_key}[{i}]", create) for i, n in enumerate(realm_names)]
        for client_id, names in client_map.items():
            roles += [self.client_role(client_id, n, f"{path}.{client_key}.{client_id}[{i}]", create)
                      for i, n in enumerate(names)]
        return roles

    def add_roles(self):
        r = self.r
        for role in r["realm_roles"]:
            self.realm_roles[role["fields"]["name"]] = self.new_role(role, None)
        for client_id, roles in r["client_roles"].items():
            client = self.client(client_id, f"roles.client.{client_id}")
            for role in roles:
                self.client_roles[(client_id, role["fields"]["name"])] = self.new_role(role, client)
        pending = [(role, self.realm_roles[role["fields"]["name"]]) for role in r["realm_roles"]]
        pending += [(role, self.client_roles[(cid, role["fields"]["name"])])
                    for cid, roles in r["client_roles"].items() for role in roles]
        self.add_composites(pending)

    def add_composites(self, pending):
        """Link each (parsed role, its row) to its composites, once every role exists."""
        through = Role.composites.through
        links = set()
        for rep, role in pending:
            comps = rep["composites"]
            targets = self.roles_from(comps["realm"], comps["client"], f"{rep['_path']}.composites",
                                      realm_key="realm", client_key="client")
            links |= {(role.pk, t.pk) for t in targets}
        through.objects.bulk_create([through(from_role_id=a, to_role_id=b) for a, b in sorted(links)])

    def new_role(self, rep, client):
        fields = dict(rep["fields"])
        fields["id"] = self.id_for(Role, fields.get("id"))
        return self.save(Role(realm=self.realm, client=client, **fields), rep["_path"], _ROLE_FIELDS)

    def add_scope_mappings(self):
        r = self.r
        for m in r["scope_mappings"]:
            roles = [self.realm_role(n, f"{m['_path']}.roles[{i}]", True) for i, n in enumerate(m["roles"])]
            self.mapping_target(m).scope_roles.add(*roles)
        for owner, mappings in r["client_scope_mappings"].items():
            for m in mappings:
                roles = [self.client_role(owner, n, f"{m['_path']}.roles[{i}]", True)
                         for i, n in enumerate(m["roles"])]
                self.mapping_target(m).scope_roles.add(*roles)

    def mapping_target(self, m):
        if m["client"] is not None:
            return self.client(m["client"], f"{m['_path']}.client")
        return self.scope(m["scope"], f"{m['_path']}.clientScope")
