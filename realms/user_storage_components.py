"""A realm representation's user storage components (``components`` under
``org.keycloak.storage.UserStorageProvider``, as Keycloak exports LDAP and custom providers),
read into ``Component`` rows and written back in Keycloak's shape. Users point at them with
``federationLink`` (the component's id)."""
from . import storage
from .models import Component

USER_STORAGE = Component.USER_STORAGE


class ComponentError(ValueError):
    def __init__(self, path, message):
        self.path, self.message = path, message
        super().__init__(f"{path}: {message}")


def _text(value, path):
    if not isinstance(value, str):
        raise ComponentError(path, "expected a string")
    return value


def _config(value, path):
    if not isinstance(value, dict):
        raise ComponentError(path, "expected an object of string lists")
    out = {}
    for name, values in value.items():
        if isinstance(values, str):
            values = [values]
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise ComponentError(f"{path}.{name}", "expected a list of strings")
        out[name] = list(values)
    return out


def parse(components, warn):
    """The user storage components of a representation's ``components`` map; ``warn(path,
    message)`` hears of each whose provider this server does not have (stored all the same, so
    its users stay linked and are refused at sign-in until the provider is available)."""
    entries = components.get(USER_STORAGE, []) if isinstance(components, dict) else []
    type_path = f'components["{USER_STORAGE}"]'
    if not isinstance(entries, list):
        raise ComponentError(type_path, "expected a list")
    out = []
    for i, comp in enumerate(entries):
        path = f"{type_path}[{i}]"
        if not isinstance(comp, dict):
            raise ComponentError(path, "expected an object")
        if not comp.get("providerId"):
            raise ComponentError(path, "providerId is required")
        out.append({
            "_path": path, "id": _text(comp.get("id") or "", f"{path}.id"),
            "name": _text(comp.get("name", comp["providerId"]), f"{path}.name"),
            "provider_id": _text(comp["providerId"], f"{path}.providerId"),
            "sub_type": _text(comp.get("subType") or "", f"{path}.subType"),
            "config": _config(comp.get("config", {}), f"{path}.config"),
        })
        if not storage.is_available(comp["providerId"]):
            warn(path, f"user storage provider {comp['providerId']!r} is not available on this server: "
                       "stored, its users cannot sign in until it is")
    return out


def store(realm, parsed, id_for):
    """Create the components; returns {id in the file: stored id} for the users' links."""
    ids = {}
    for comp in parsed:
        fields = {k: v for k, v in comp.items() if k not in ("_path", "id")}
        # A user storage provider's parent is its realm (Keycloak's parentId, derived on export).
        row = Component.objects.create(realm=realm, id=id_for(Component, comp["id"]), parent_id=realm.pk,
                                       provider_type=USER_STORAGE, **fields)
        if comp["id"]:
            ids[comp["id"]] = row.pk
    return ids


def export(realm):
    """``{USER_STORAGE: [...]}`` when the realm has user storage components, else nothing."""
    reps = [{"id": c.id, "name": c.name, "providerId": c.provider_id, "subComponents": {}, "config": c.config,
             **({"subType": c.sub_type} if c.sub_type else {})}
            for c in Component.objects.filter(realm=realm, provider_type=USER_STORAGE).order_by("name")]
    return {USER_STORAGE: reps} if reps else {}
