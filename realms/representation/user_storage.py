"""A realm representation's user storage components (``components`` under
``org.keycloak.storage.UserStorageProvider``, as Keycloak exports LDAP and custom providers),
read into ``Component`` rows and written back in Keycloak's shape. Users point at them with
``federationLink`` (the component's id)."""
from .. import storage
from ..models import Component
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
        out.append({
            "_path": path, "id": as_str(comp.get("id") or "", f"{path}.id"),
            "name": as_str(comp.get("name", comp["providerId"]), f"{path}.name"),
            "provider_id": as_str(comp["providerId"], f"{path}.providerId"),
            "sub_type": as_str(comp.get("subType") or "", f"{path}.subType"),
            "config": as_multi_map(comp.get("config", {}), f"{path}.config"),
        })
        try:
            storage.validate_config(comp["providerId"], out[-1]["config"])
        except storage.InvalidConfig as error:
            raise RepresentationError(f"{path}.config", str(error)) from None
        if not storage.is_available(comp["providerId"]):
            p.unsupported(path, f"user storage provider {comp['providerId']!r} is not available on this server: "
                                "stored, its users cannot sign in until it is")
    return out


class UserStorageApplier:
    def add_user_storage(self, parsed):
        """Create the components; ``self.components`` maps an id in the file to the stored id for
        the users' links."""
        self.components = {}
        for comp in parsed:
            fields = {k: v for k, v in comp.items() if k not in ("_path", "id")}
            # A user storage provider's parent is its realm (Keycloak's parentId, derived on export).
            row = Component.objects.create(realm=self.realm, id=self.id_for(Component, comp["id"]),
                                           parent_id=self.realm.pk, provider_type=USER_STORAGE, **fields)
            if comp["id"]:
                self.components[comp["id"]] = row.pk


def user_storage_reps(realm):
    """``{USER_STORAGE: [...]}`` when the realm has user storage components, else nothing."""
    reps = [{"id": c.id, "name": c.name, "providerId": c.provider_id, "subComponents": {}, "config": c.config,
             **({"subType": c.sub_type} if c.sub_type else {})}
            for c in Component.objects.filter(realm=realm, provider_type=USER_STORAGE).order_by("name")]
    return {USER_STORAGE: reps} if reps else {}
