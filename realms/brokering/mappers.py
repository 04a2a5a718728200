"""Identity provider mappers (Keycloak's ``IdentityProviderMapper``): the registry the apps fill
(``register_mapper_type``) and when a mapper runs.

A mapper is stored per provider (``IdentityProviderMapper``: its type's id and a string map).
On a brokered sign-in the broker calls, for each of the provider's mappers:

* ``preprocess`` before the user is looked up or created (a username template sets the
  username the first broker login proposes);
* ``import_new_user`` when first broker login created the user;
* ``update_brokered_user`` on every later sign-in, when the mapper's sync mode (its own
  ``syncMode``, ``INHERIT`` = the provider's) is FORCE; LEGACY runs ``update_brokered_user_legacy``
  (Keycloak's legacy behaviour, which most mappers treat as FORCE); IMPORT runs nothing.

``compatible`` lists the provider types a mapper applies to (``ANY`` for all), as Keycloak's
``getCompatibleProviders``; the Admin API's ``mapper-types`` offers a provider the compatible ones."""
import logging

from ..registry import Registry

logger = logging.getLogger("idp.broker")

ANY = "*"
INHERIT = "INHERIT"


def config_property(name, label, help_text, type="String", **extra):
    """A mapper's config property as Keycloak's ConfigPropertyRepresentation."""
    return {"name": name, "label": label, "helpText": help_text, "type": type, **extra}


# Every mapper's last property: its own sync mode, or its provider's (INHERIT).
SYNC_MODE_PROPERTY = config_property("syncMode", "Sync mode override",
                                     "Overrides the default sync mode of IDP for this mapper.", "List",
                                     defaultValue=INHERIT, options=[INHERIT, "IMPORT", "LEGACY", "FORCE"])


class MapperType:
    """One kind of mapper. ``properties`` are Keycloak's ConfigProperty representations
    (``name``, ``label``, ``helpText``, ``type``, ``defaultValue``, ``options``)."""

    id = ""
    name = ""  # Keycloak's display type
    category = ""
    help_text = ""
    compatible = (ANY,)
    properties = ()

    def applies_to(self, provider_id):
        return ANY in self.compatible or provider_id in self.compatible

    def preprocess(self, realm, idp, mapper, identity):
        """Change ``identity`` (a ``BrokeredIdentity``) before the user is found or created."""

    def import_new_user(self, realm, idp, mapper, user, identity):
        """The user was just created from ``identity``."""

    def update_brokered_user(self, realm, idp, mapper, user, identity):
        """A later sign-in with sync mode FORCE: make the user match ``identity`` again."""

    def update_brokered_user_legacy(self, realm, idp, mapper, user, identity):
        """A later sign-in with sync mode LEGACY (Keycloak's default for providers made before
        sync modes existed)."""
        self.update_brokered_user(realm, idp, mapper, user, identity)


GRANTED = "mapper_granted"  # identity.context: the roles and groups this sign-in's mappers gave


def roles(user):
    return user.roles


def groups(user):
    return user.groups


class ConditionalGrant(MapperType):
    """A mapper that gives a role or a group when ``applies`` (the provider's claims or
    attributes say so), and takes it away on a later FORCE or LEGACY sign-in when they no longer
    do, unless another mapper of the same sign-in gave it."""

    category = "Role Importer"
    gives = "role"  # or "group": the config key naming it (a role reference, a group path)

    def applies(self, mapper, identity):
        raise NotImplementedError

    def target(self, realm, mapper):
        """(the role or group, ``roles`` or ``groups``), or (None, None) when the realm has none."""
        name = (mapper.config or {}).get(self.gives, "")
        found = role_from_string(realm, name) if self.gives == "role" else group_from_path(realm, name)
        if found is None:
            logger.warning("realm %s: mapper %r names no %s of this realm", realm.name, mapper.name, self.gives)
            return None, None
        return found, roles if self.gives == "role" else groups

    def import_new_user(self, realm, idp, mapper, user, identity):
        target, relation = self.target(realm, mapper)
        if target is not None and self.applies(mapper, identity):
            relation(user).add(target)
            identity.context.setdefault(GRANTED, []).append(f"{relation.__name__}:{target.pk}")

    def update_brokered_user(self, realm, idp, mapper, user, identity):
        target, relation = self.target(realm, mapper)
        if target is None:
            return
        key = f"{relation.__name__}:{target.pk}"
        granted = identity.context.setdefault(GRANTED, [])
        if key in granted:
            return
        if self.applies(mapper, identity):
            granted.append(key)
            relation(user).add(target)
        else:
            relation(user).remove(target)


_types = Registry("identity provider mapper types")


def register_mapper_type(mapper_type):
    return _types.add_instance(mapper_type, "id")


def get_mapper_type(mapper_id):
    return _types.get(mapper_id)


def mapper_types():
    return _types.by_key()


def sync_mode(idp, mapper):
    """The sync mode ``mapper`` runs under: its own, or its provider's when INHERIT or unset."""
    mode = (mapper.config or {}).get("syncMode") or INHERIT
    return idp.sync_mode if mode == INHERIT else mode


# What mappers read and do, shared by every mapper type --------------------------------------

def key_value_pairs(value):
    """Keycloak's Map config property: a JSON list of ``{"key": ..., "value": ...}`` as pairs;
    None when it is not one."""
    import json

    try:
        parsed = json.loads(value or "[]")
    except ValueError:
        return None
    if not isinstance(parsed, list) or not all(isinstance(p, dict) for p in parsed):
        return None
    return [(str(p.get("key", "")), str(p.get("value", ""))) for p in parsed]


def all_match(mapper, map_key, regex_key, values_of):
    """Keycloak's advanced mappers: every (name, value) pair of the mapper's Map property
    ``map_key`` has its value among ``values_of(name)``, or, when ``regex_key`` is "true", a value
    matching it in full as a regular expression. A map that is malformed or empty matches
    nothing (a mapper with no condition grants nothing)."""
    import re

    config = mapper.config or {}
    pairs = key_value_pairs(config.get(map_key))
    if not pairs:
        if pairs is None:
            logger.warning("mapper %r: %s is not Keycloak's list of key and value", mapper.name, map_key)
        return False
    regex = config.get(regex_key) == "true"
    for name, wanted in pairs:
        values = values_of(name)
        if regex:
            try:
                pattern = re.compile(wanted)
            except re.error:
                logger.warning("mapper %r: %r is not a regular expression", mapper.name, wanted)
                return False
            if not any(pattern.fullmatch(v) for v in values):
                return False
        elif wanted not in values:
            return False
    return True


_PROFILE_FIELDS = {"email": "email", "firstName": "first_name", "lastName": "last_name", "username": "username"}


def role_from_string(realm, value):
    """Keycloak's role reference in a mapper's config: a realm role's name, or ``clientId.role``
    (the client id may itself contain dots: each split is tried, left to right)."""
    from ..models import Role

    role = Role.objects.filter(realm=realm, client=None, name=value).first()
    position = value.find(".")
    while role is None and position > 0:
        role = Role.objects.filter(realm=realm, client__client_id=value[:position], name=value[position + 1:]).first()
        position = value.find(".", position + 1)
    return role


def group_from_path(realm, path):
    """A group by its path (``/parent/child``), or None."""
    from ..models import Group

    group = None
    for name in [n for n in (path or "").split("/") if n]:
        group = Group.objects.filter(realm=realm, parent=group, name=name).first()
        if group is None:
            return None
    return group


def set_attribute(user, name, values):
    """Set a user attribute (``email``, ``firstName``, ``lastName`` are the profile's fields),
    saving only when it changed; empty ``values`` remove it."""
    values = [str(v) for v in values if v is not None and v != ""]
    field = _PROFILE_FIELDS.get(name)
    if field is not None and field != "username":
        value = values[0] if values else ""
        value = value.lower() if field == "email" else value
        if getattr(user, field) != value:
            setattr(user, field, value)
            user.save(update_fields=[field])
        return
    attributes = dict(user.attributes or {})
    if attributes.get(name, []) == values or (not values and name not in attributes):
        return
    if values:
        attributes[name] = values
    else:
        attributes.pop(name, None)
    user.attributes = attributes
    user.save(update_fields=["attributes"])
