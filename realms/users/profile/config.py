"""A realm's UPConfig (Keycloak 26's declarative user profile): checked as a whole before it is
stored, kept as Keycloak keeps it (the ``org.keycloak.userprofile.UserProfileProvider`` component,
``declarative-user-profile``, its JSON under ``kc.user.profile.config``) so that an export carries
it unchanged. A realm without one has Keycloak's default profile; its unmanaged attributes stay
editable (``ENABLED``), as Keycloak's migration leaves realms made before the declarative profile."""
import copy
import json
import re

from ...data import realm_cache
from ...models import Component
from .validators import ConfigError, check

PROVIDER_TYPE = "org.keycloak.userprofile.UserProfileProvider"
PROVIDER_ID = "declarative-user-profile"
CONFIG_KEY = "kc.user.profile.config"
ROLES = ("user", "admin")
UNMANAGED_POLICIES = ("ENABLED", "ADMIN_VIEW", "ADMIN_EDIT")
ROOT = ("username", "email", "firstName", "lastName")
_NAME = re.compile(r"^[A-Za-z0-9._\-]+$")
_BOTH = {"view": ["admin", "user"], "edit": ["admin", "user"]}
_NAME_RULES = {"length": {"max": 255}, "person-name-prohibited-characters": {}}


# Keycloak 26's keycloak-default-user-profile.json.
DEFAULT = {
    "attributes": [
        {"name": "username", "displayName": "${username}",
         "validations": {"length": {"min": 3, "max": 255}, "username-prohibited-characters": {},
                         "up-username-not-idn-homograph": {}},
         "permissions": _BOTH, "multivalued": False},
        {"name": "email", "displayName": "${email}", "validations": {"email": {}, "length": {"max": 255}},
         "required": {"roles": ["user"]}, "permissions": _BOTH, "multivalued": False},
        *({"name": name, "displayName": "${" + name + "}", "validations": _NAME_RULES,
           "required": {"roles": ["user"]}, "permissions": _BOTH, "multivalued": False}
          for name in ("firstName", "lastName")),
    ],
    "groups": [{"name": "user-metadata", "displayHeader": "User metadata",
                "displayDescription": "Attributes, which refer to user metadata"}],
}
_ATTRIBUTE_KEYS = {"name", "displayName", "validations", "annotations", "required", "permissions", "selector",
                   "group", "multivalued"}
_GROUP_KEYS = {"name", "displayHeader", "displayDescription", "annotations"}


def _object(value, where):
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: expected an object")
    return value


def _keys(obj, allowed, where):
    unknown = set(obj) - allowed
    if unknown:
        raise ConfigError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")


def _strings(value, where, allowed=None):
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise ConfigError(f"{where}: expected a list of strings")
    if allowed is not None and set(value) - set(allowed):
        raise ConfigError(f"{where}: only {' and '.join(allowed)} are allowed")
    return value


def _text(value, where):
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"{where}: expected a string")
    return value


def parse(data):
    """The UPConfig ``data`` (a dict, or its JSON text) checked; raises ConfigError. Returned as
    given (Keycloak keeps the document as written), unknown fields and validators refused."""
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except ValueError:
            raise ConfigError("the user profile configuration is not valid JSON") from None
    data = _object(data, "user profile configuration")
    _keys(data, {"attributes", "groups", "unmanagedAttributePolicy"}, "user profile configuration")
    policy = data.get("unmanagedAttributePolicy")
    if policy is not None and policy not in UNMANAGED_POLICIES:
        raise ConfigError(f"unmanagedAttributePolicy: {policy!r} is not one of {', '.join(UNMANAGED_POLICIES)}")
    groups = data.get("groups") or []
    if not isinstance(groups, list):
        raise ConfigError("groups: expected a list")
    group_names = set()
    for i, group in enumerate(groups):
        where = f"groups[{i}]"
        _keys(_object(group, where), _GROUP_KEYS, where)
        name = _text(group.get("name"), f"{where}.name")
        if not name:
            raise ConfigError(f"{where}: a group needs a name")
        if name in group_names:
            raise ConfigError(f"{where}: duplicate group '{name}'")
        group_names.add(name)
        for key in ("displayHeader", "displayDescription"):
            _text(group.get(key), f"{where}.{key}")
        _object(group.get("annotations"), f"{where}.annotations")
    attributes = data.get("attributes")
    if not isinstance(attributes, list):
        raise ConfigError("attributes: expected a list")
    names = set()
    for i, attr in enumerate(attributes):
        where = f"attributes[{i}]"
        _keys(_object(attr, where), _ATTRIBUTE_KEYS, where)
        name = attr.get("name")
        if not isinstance(name, str) or not _NAME.match(name):
            raise ConfigError(f"{where}: invalid attribute name {name!r}")
        where = f"attribute '{name}'"
        if name in names:
            raise ConfigError(f"{where}: duplicate attribute")
        names.add(name)
        _text(attr.get("displayName"), f"{where}.displayName")
        for validator, config in _object(attr.get("validations"), f"{where}.validations").items():
            check(validator, config if config is not None else {}, f"{where}: validator '{validator}'")
        _object(attr.get("annotations"), f"{where}.annotations")
        if attr.get("required") is not None:
            required = _object(attr["required"], f"{where}.required")
            _keys(required, {"roles", "scopes"}, f"{where}.required")
            _strings(required.get("roles"), f"{where}.required.roles", ROLES)
            _strings(required.get("scopes"), f"{where}.required.scopes")
        permissions = _object(attr.get("permissions"), f"{where}.permissions")
        _keys(permissions, {"view", "edit"}, f"{where}.permissions")
        for key in ("view", "edit"):
            _strings(permissions.get(key), f"{where}.permissions.{key}", ROLES)
        selector = _object(attr.get("selector"), f"{where}.selector")
        _keys(selector, {"scopes"}, f"{where}.selector")
        _strings(selector.get("scopes"), f"{where}.selector.scopes")
        group = attr.get("group")
        if group is not None and group not in group_names:
            raise ConfigError(f"{where}: group '{group}' is not defined in groups")
        if not isinstance(attr.get("multivalued", False), bool):
            raise ConfigError(f"{where}.multivalued: expected true or false")
        if name in ROOT and attr.get("multivalued"):
            raise ConfigError(f"{where}: cannot be multivalued")
    for name in ("username", "email"):
        if name not in names:
            raise ConfigError(f"the attribute '{name}' cannot be removed")
    return data


def _load(realm):
    row = Component.objects.filter(realm=realm, provider_type=PROVIDER_TYPE).first()
    if row is None:
        return None
    return json.loads(row.get(CONFIG_KEY) or "null")


def stored(realm):
    """The realm's stored UPConfig, or None (the default applies)."""
    cached = realm_cache.stored(realm, "user-profile", lambda r: {"config": _load(r)})
    return cached["config"] if cached else _load(realm)


def effective(realm):
    """The UPConfig in force: the stored one, else the default with unmanaged attributes enabled."""
    config = stored(realm)
    if config is None:
        config = {**copy.deepcopy(DEFAULT), "unmanagedAttributePolicy": "ENABLED"}
    return config


def rep(realm):
    """The UPConfig as the Admin API's GET users/profile answers it."""
    return copy.deepcopy(stored(realm) or DEFAULT)


def store(realm, data, component_id=None):
    """Check ``data`` (ConfigError) and make it the realm's profile."""
    data = parse(data)
    text = json.dumps(data, separators=(",", ":"))
    row = Component.objects.filter(realm=realm, provider_type=PROVIDER_TYPE).first()
    if row is None:
        row = Component(realm=realm, provider_type=PROVIDER_TYPE, provider_id=PROVIDER_ID, name=PROVIDER_ID,
                        parent_id=realm.pk, **({"id": component_id} if component_id else {}))
    row.config = {CONFIG_KEY: [text]}
    row.save()
    realm_cache.changed(realm.pk)
    return data


def component_reps(realm):
    """``{PROVIDER_TYPE: [...]}`` when the realm has a stored profile (a realm export), else nothing."""
    row = Component.objects.filter(realm=realm, provider_type=PROVIDER_TYPE).first()
    if row is None:
        return {}
    return {PROVIDER_TYPE: [{"id": row.id, "providerId": row.provider_id, "subComponents": {},
                             "config": row.config}]}
