"""Groups (a tree) with their role grants: fields, parsing, import and export."""
from ..models import Group
from .fields import (
    RepresentationError,
    as_list,
    as_multi_map,
    as_role_map,
    as_str,
    as_str_list,
    at,
    json_fields,
    model_fields,
    spec_of,
)
from .roles import role_names

_GROUP_FIELDS = {
    "id": ("id", as_str),
    "name": ("name", as_str),
    "description": ("description", as_str),
    "attributes": ("attributes", as_multi_map),
}
# Keys Keycloak computes from other data.
_DERIVED = {"path", "parentId", "subGroupCount", "access"}


def parse_group(g, path, p):
    values = p.take(
        g, path,
        spec_of(_GROUP_FIELDS, {"subGroups": as_list, "realmRoles": as_str_list, "clientRoles": as_role_map}),
        derived=_DERIVED, required=("name",),
    )
    children = [parse_group(s, f"{path}.subGroups[{i}]", p) for i, s in enumerate(values.get("subGroups", []))]
    seen = set()
    for child in children:
        if child["fields"]["name"] in seen:
            raise RepresentationError(at(child["_path"], "name"), f"duplicate {child['fields']['name']!r}")
        seen.add(child["fields"]["name"])
    return {
        "_path": path,
        "fields": model_fields(_GROUP_FIELDS, values),
        "realm_roles": values.get("realmRoles", []),
        "client_roles": values.get("clientRoles", {}),
        "children": children,
    }


def group_rep(group, children_of, parent_id):
    realm_names, client = role_names(list(group.roles.all().select_related("client")))
    rep = {**json_fields(group, _GROUP_FIELDS), "path": group.path, "realmRoles": realm_names,
           "clientRoles": client, "subGroups": [group_rep(c, children_of, group.id) for c in children_of.get(group.id, [])]}
    if parent_id:
        rep["parentId"] = parent_id
    return rep


class GroupApplier:
    """The importer's step for groups (a part of importer._Applier)."""

    def add_group(self, g, parent):
        fields = dict(g["fields"])
        fields["id"] = self.id_for(Group, fields.get("id"))
        group = self.save(Group(realm=self.realm, parent=parent, **fields), g["_path"], _GROUP_FIELDS)
        self.groups[group.path] = group
        group.roles.add(*self.roles_from(g["realm_roles"], g["client_roles"], g["_path"], create=True))
        for child in g["children"]:
            self.add_group(child, group)
