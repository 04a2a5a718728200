"""A realm representation's user storage components (``components`` under
``org.keycloak.storage.UserStorageProvider``, as Keycloak exports LDAP and custom providers),
read into ``Component`` rows and written back in Keycloak's shape. Users point at them with
``federationLink`` (the component's id)."""
from ..models import Component
from ..users import storage
from .fields import RepresentationError, as_multi_map, as_str

USER_STORAGE = Component.USER_STORAGE


def parse_user_storage(components, p):
    """The user storage components of a representation's ``components`` map. One whose provider
    this server does not have is stored all the same, with a warning, so its users stay linked and
    are refused at sign-in until the provider is available."""
    entries = components.get(USER_STORAGE, []) if isinstance(components, dict) else []
    type_path = f'components["{USER_STORAGE}"]'
    if not isinstance(entries, list):
        raise RepresentationError(type_path, "expected a list")
    out = []
    for i, comp in enumerate(entries):
        path = f"{type_path}[{i}]"
        if not isinstance(comp, dict):
            raise RepresentationError(path, "expected an object")
        if not comp.get("providerId"):
            raise RepresentationError(path, "providerId is required")
        out.append({**_component(comp, path),
                    "children": _children(comp.get("subComponents"), f"{path}.subComponents")})
        for kind, config, where, parent in ((comp["providerId"], out[-1]["config"], path, None), *(
                (c["provider_id"], c["config"], c["_path"], out[-1]["config"]) for c in out[-1]["children"])):
            try:
                storage.validate_config(kind, config, parent)
            except storage.InvalidConfig as error:
                raise RepresentationError(f"{where}.config", str(error)) from None
        if not storage.is_available(comp["providerId"]):
            p.unsupported(path, f"user storage provider {comp['providerId']!r} is not available on this server: "
                                "stored, its users cannot sign in until it is")
    return out


def _component(comp, path):
    return {
        "_path": path, "id": as_str(comp.get("id") or "", f"{path}.id"),
        "name": as_str(comp.get("name", comp["providerId"]), f"{path}.name"),
        "provider_id": as_str(comp["providerId"], f"{path}.providerId"),
        "sub_type": as_str(comp.get("subType") or "", f"{path}.subType"),
        "config": as_multi_map(comp.get("config", {}), f"{path}.config"),
    }


def _children(sub, path):
    """A provider's ``subComponents`` (type -> list: an LDAP provider's mappers)."""
    if sub is None:
        return []
    if not isinstance(sub, dict):
        raise RepresentationError(path, "expected an object")
    out = []
    for kind, entries in sub.items():
        if not isinstance(entries, list):
            raise RepresentationError(f'{path}["{kind}"]', "expected a list")
        for i, comp in enumerate(entries):
            p = f'{path}["{kind}"][{i}]'
            if not isinstance(comp, dict) or not comp.get("providerId"):
                raise RepresentationError(p, "expected an object with a providerId")
            out.append({**_component(comp, p), "provider_type": as_str(kind, path)})
    return out


class UserStorageApplier:
    def add_user_storage(self, parsed):
        """Create the components; ``self.components`` maps an id in the file to the stored id for
        the users' links."""
        self.components = {}
        for comp in parsed:
            fields = {k: v for k, v in comp.items() if k not in ("_path", "id", "children")}
            # A user storage provider's parent is its realm (Keycloak's parentId, derived on export).
            row = Component.objects.create(realm=self.realm, id=self.id_for(Component, comp["id"]),
                                           parent_id=self.realm.pk, provider_type=USER_STORAGE, **fields)
            if comp["id"]:
                self.components[comp["id"]] = row.pk
            for child in comp["children"]:
                Component.objects.create(realm=self.realm, id=self.id_for(Component, child["id"]), parent_id=row.pk,
                                         **{k: v for k, v in child.items() if k not in ("_path", "id")})


def user_storage_reps(realm):
    """``{USER_STORAGE: [...]}`` when the realm has user storage components, else nothing."""
    rows = list(Component.objects.filter(realm=realm).order_by("name", "pk"))
    children = {}
    for c in rows:
        if c.provider_type != USER_STORAGE:
            children.setdefault(c.parent_id, {}).setdefault(c.provider_type, []).append(_rep(c, {}))
    reps = [_rep(c, children.get(c.id, {})) for c in rows if c.provider_type == USER_STORAGE]
    return {USER_STORAGE: reps} if reps else {}


def _rep(c, sub):
    # Secrets in clear, as Keycloak's export writes them (they are encrypted at rest here).
    return {"id": c.id, "name": c.name, "providerId": c.provider_id, "subComponents": sub,
            "config": storage.open_config(c), **({"subType": c.sub_type} if c.sub_type else {})}
