"""SAML attributes from protocol mappers (Keycloak's SAML mapper types and config keys).

Mappers come from the client itself and from its linked SAML client scopes (``role_list`` by
default). Each type turns the user into zero or more (name, name format, friendly name, values)
attribute entries; the assertion builder writes them into one AttributeStatement.

* ``saml-user-property-mapper``: ``user.attribute`` names a user property (username, email,
  firstName, lastName, emailVerified, id).
* ``saml-user-attribute-mapper``: ``user.attribute`` names a custom user attribute;
  ``aggregate.attrs`` merges the values of groups' attributes of the same name.
* ``saml-hardcode-attribute-mapper``: ``attribute.value``.
* ``saml-role-list-mapper``: every role the user holds within the client's scope, by name;
  ``single`` = one Attribute with all values, else one Attribute per role.
* ``saml-group-membership-mapper``: the user's groups; ``full.path`` = "/a/b" instead of "b".

Common keys: ``attribute.name``, ``attribute.nameformat`` (Basic, URI Reference, Unspecified or
the URN), ``friendly.name``.
"""
import functools
from dataclasses import dataclass

from realms.data import realm_cache
from realms.models import ClientScope, ProtocolMapper, Role, expand_composites, group_with_ancestors

from . import constants as c

_USER_PROPERTIES = {
    "username": "username", "email": "email", "firstName": "first_name", "lastName": "last_name",
    "emailVerified": "email_verified", "id": "pk",
}


@dataclass
class Attribute:
    name: str
    name_format: str
    friendly_name: str
    values: list


def _name_format(config):
    value = config.get("attribute.nameformat") or "Basic"
    return c.ATTRNAME_FORMATS.get(value, value)


def _attribute(config, values, default_name=""):
    return Attribute(config.get("attribute.name") or default_name, _name_format(config),
                     config.get("friendly.name") or "", [str(v) for v in values])


def mappers_for(client):
    """The client's SAML mappers and those of its SAML client scopes (scope mappers first)."""
    scope_ids = client.scope_links.filter(client_scope__protocol=c.PROTOCOL).values_list("client_scope_id", flat=True)
    scoped = ProtocolMapper.objects.filter(protocol=c.PROTOCOL, client_scope_id__in=list(scope_ids)).order_by("name")
    own = ProtocolMapper.objects.filter(protocol=c.PROTOCOL, client=client).order_by("name")
    # A client often repeats a scope's mapper (Keycloak's older exports copy "role list" into
    # every SAML client): the same type and config would only write the attribute twice.
    unique = {}
    for mapper in [*scoped, *own]:
        unique.setdefault((mapper.protocol_mapper, tuple(sorted((mapper.config or {}).items()))), mapper)
    return list(unique.values())


def _multi(value):
    if value is None:
        return []
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def allowed_role_ids(client):
    """Ids of the roles the client may see: None for full scope, else its own roles plus the
    scope roles of the client and of its SAML client scopes, composites expanded."""
    if client.full_scope_allowed:
        return None
    ids = set(Role.objects.filter(client=client).values_list("pk", flat=True))
    ids |= set(client.scope_roles.values_list("pk", flat=True))
    scopes = ClientScope.objects.filter(client_links__client=client, protocol=c.PROTOCOL)
    ids |= set(Role.objects.filter(scoped_in_client_scopes__in=scopes).values_list("pk", flat=True))
    return frozenset(r.pk for r in expand_composites(list(Role.objects.filter(pk__in=ids))))


def role_names(user, client):
    """Names of the roles the user holds that the SamlClient ``client`` may see."""
    roles = realm_cache.effective_roles(user)
    if client.allowed_role_ids is not None:
        roles = [r for r in roles if r.pk in client.allowed_role_ids]
    return sorted({r.name for r in roles})


class _Reads:
    """What several mappers of one assertion read of the user, read once for all of them: a role
    list mapper and a client's own copy of it with another config, or a group mapper beside an
    attribute mapper that aggregates groups' attributes, each read them again before."""

    def __init__(self, user, client):
        self.user, self.client = user, client

    @functools.cached_property
    def role_names(self):
        return role_names(self.user, self.client)

    @functools.cached_property
    def groups(self):
        return list(self.user.groups.all())

    @functools.cached_property
    def groups_with_ancestors(self):
        return group_with_ancestors(self.groups)


def attributes_for(user, client):
    """The attributes the SamlClient ``client``'s mappers give ``user``."""
    out = []
    reads = _Reads(user, client)
    for mapper in client.mappers:
        config = mapper.config or {}
        kind = mapper.protocol_mapper
        if kind == "saml-user-property-mapper":
            field = _USER_PROPERTIES.get(config.get("user.attribute", ""))
            value = getattr(user, field) if field else None
            if value not in (None, ""):
                value = str(value).lower() if isinstance(value, bool) else value
                out.append(_attribute(config, [value]))
        elif kind == "saml-user-attribute-mapper":
            name = config.get("user.attribute", "")
            values = _multi((user.attributes or {}).get(name))
            if config.get("aggregate.attrs") == "true":
                inherited = [v for group in reads.groups_with_ancestors
                             for v in _multi((group.attributes or {}).get(name))]
                values += [v for v in inherited if v not in values]
            if values:
                out.append(_attribute(config, values))
        elif kind == "saml-hardcode-attribute-mapper":
            out.append(_attribute(config, [config.get("attribute.value", "")]))
        elif kind == "saml-role-list-mapper":
            names = reads.role_names
            if config.get("single") == "true":
                if names:
                    out.append(_attribute(config, names, "Role"))
            else:
                out += [_attribute(config, [name], "Role") for name in names]
        elif kind == "saml-group-membership-mapper":
            if config.get("full.path", "true") == "true":
                # A group made in another process within the last second may not be there yet.
                paths = realm_cache.group_tree(client.client.realm).paths
                names = sorted(paths.get(g.pk) or g.path for g in reads.groups)
            else:
                names = sorted(g.name for g in reads.groups)
            if config.get("single") == "true":
                if names:
                    out.append(_attribute(config, names, "member"))
            else:
                out += [_attribute(config, [name], "member") for name in names]
    return out
