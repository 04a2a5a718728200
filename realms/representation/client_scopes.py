"""Client scopes: fields, parsing, import (with the realm's and the clients' default and optional
scope links) and export."""
from ..models import ClientScope, ClientScopeLink, RealmDefaultClientScope
from .fields import RepresentationError, as_list, as_str, as_str_map, json_fields, model_fields, spec_of
from .protocol_mappers import mapper_reps, parse_mapper

_SCOPE_FIELDS = {
    "id": ("id", as_str),
    "name": ("name", as_str),
    "description": ("description", as_str),
    "protocol": ("protocol", as_str),
    "attributes": ("attributes", as_str_map),
}


def parse_scope(s, path, p):
    values = p.take(s, path, spec_of(_SCOPE_FIELDS, {"protocolMappers": as_list}), required=("name",))
    return {
        "_path": path,
        "fields": model_fields(_SCOPE_FIELDS, values),
        "mappers": [parse_mapper(m, f"{path}.protocolMappers[{i}]", p)
                    for i, m in enumerate(values.get("protocolMappers", []))],
    }


def scope_rep(scope):
    return {**json_fields(scope, _SCOPE_FIELDS), "protocolMappers": mapper_reps(scope.protocol_mappers.all())}


class ClientScopeApplier:
    """The importer's steps for client scopes (a part of importer._Applier)."""

    def scope(self, name, path):
        try:
            return self.scopes[name]
        except KeyError:
            raise RepresentationError(path, f"unknown client scope {name!r}") from None

    def add_scope(self, s):
        fields = dict(s["fields"])
        fields["id"] = self.id_for(ClientScope, fields.get("id"))
        scope = self.save(ClientScope(realm=self.realm, **fields), s["_path"], _SCOPE_FIELDS)
        self.scopes[scope.name] = scope
        self.add_mappers(s["mappers"], client_scope=scope)

    def link_scopes(self):
        r = self.r
        realm_links = {}
        for key, default in (("default_default_scopes", True), ("default_optional_scopes", False)):
            json_key = "defaultDefaultClientScopes" if default else "defaultOptionalClientScopes"
            for i, name in enumerate(r[key]):
                realm_links[self.scope(name, f"{json_key}[{i}]").pk] = default
        RealmDefaultClientScope.objects.bulk_create(
            [RealmDefaultClientScope(realm=self.realm, client_scope_id=pk, default=d) for pk, d in realm_links.items()]
        )
        self.link_client_scopes(r["clients"])

    def link_client_scopes(self, parsed_clients):
        """Each client's default and optional scopes (the realm's defaults of its protocol when
        the representation names none)."""
        r = self.r
        rows = []
        for c in parsed_clients:
            client = self.clients[c["fields"]["client_id"]]
            links = {}
            for key, default, json_key in (("default_scopes", True, "defaultClientScopes"),
                                           ("optional_scopes", False, "optionalClientScopes")):
                if c[key] is None:  # New clients get the realm's defaults of their protocol.
                    names = r["default_default_scopes"] if default else r["default_optional_scopes"]
                    for name in names:
                        scope = self.scopes[name]
                        if scope.protocol == client.protocol:
                            links.setdefault(scope.pk, default)
                else:
                    for i, name in enumerate(c[key]):
                        links.setdefault(self.scope(name, f"{c['_path']}.{json_key}[{i}]").pk, default)
            rows += [ClientScopeLink(client=client, client_scope_id=pk, default=d) for pk, d in links.items()]
        ClientScopeLink.objects.bulk_create(rows)
