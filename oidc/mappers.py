"""Protocol mappers: each writes one claim into a token, keyed by Keycloak's mapper type names and
reading Keycloak's config keys, so imported realms behave as they did in Keycloak.

A mapper applies to a token type when its config says so: ``access.token.claim`` and
``introspection.token.claim`` default to true when absent (Keycloak's backwards compatibility),
``id.token.claim`` to false, ``userinfo.token.claim`` to the ID-token setting. Other apps may
register more types with ``register``.
"""
import functools
import json

from realms.registry import Registry
from realms.users import organizations

ACCESS, ID, USERINFO, INTROSPECTION = "access", "id", "userinfo", "introspection"
_CONFIG_KEY = {ACCESS: "access.token.claim", ID: "id.token.claim", USERINFO: "userinfo.token.claim",
               INTROSPECTION: "introspection.token.claim"}

REGISTRY = Registry("protocol mappers")


def register(type_name, *, token_types=(ACCESS, ID, USERINFO, INTROSPECTION)):
    def wrap(func):
        REGISTRY.add(type_name, (func, frozenset(token_types)))
        return func
    return wrap


def applies(mapper_config, token_type):
    value = mapper_config.get(_CONFIG_KEY[token_type])
    if value is None:
        if token_type in (ACCESS, INTROSPECTION):
            return True
        if token_type == USERINFO:
            return mapper_config.get("id.token.claim") == "true"
        return False
    return value == "true"


def compile_mappers(mappers, token_type):
    """The (function, config) pairs that write claims into ``token_type``, in order; computed
    once per client and scope combination, not per token."""
    out = []
    for mapper in mappers:
        entry = REGISTRY.get(mapper.protocol_mapper)
        if entry is None:
            continue  # a type this server does not implement contributes nothing, as in Keycloak
        func, token_types = entry
        if token_type in token_types and applies(mapper.config, token_type):
            out.append((func, mapper.config))
    return out


def apply_mappers(compiled, claims, ctx):
    for func, config in compiled:
        func(config, claims, ctx)
    return claims


# Claim writing ---------------------------------------------------------------------------------

@functools.lru_cache(maxsize=4096)
def _split_claim_name(name):
    """``a.b`` is nested; ``a\\.b`` is one claim named ``a.b`` (Keycloak's escape)."""
    parts, current, i = [], "", 0
    while i < len(name):
        if name[i] == "\\" and i + 1 < len(name) and name[i + 1] == ".":
            current += "."
            i += 2
            continue
        if name[i] == ".":
            parts.append(current)
            current = ""
        else:
            current += name[i]
        i += 1
    parts.append(current)
    return tuple(p for p in parts if p)


def _convert(value, json_type):
    if value is None:
        return None
    label = (json_type or "String").lower()
    try:
        if label in ("long", "int"):
            return int(value)
        if label == "boolean":
            return value if isinstance(value, bool) else str(value).lower() == "true"
        if label == "json":
            return json.loads(value) if isinstance(value, str) else value
    except (TypeError, ValueError):
        return None
    if label == "string" and not isinstance(value, str):
        return str(value).lower() if isinstance(value, bool) else str(value)
    return value


def set_claim(claims, config, value, *, name=None):
    """Write ``value`` at the claim path, converted per jsonType.label; lists merge."""
    name = name or config.get("claim.name", "")
    path = _split_claim_name(name)
    if not path or value is None:
        return
    json_type = config.get("jsonType.label")
    if isinstance(value, (list, tuple, set)):
        value = [v for v in (_convert(v, json_type) for v in value) if v is not None]
        if config.get("multivalued") != "true":
            if not value:
                return
            value = value[0]
    else:
        value = _convert(value, json_type)
        if value is None:
            return
        if config.get("multivalued") == "true":
            value = [value]
    node = claims
    for part in path[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    last = path[-1]
    existing = node.get(last)
    if isinstance(existing, list) and isinstance(value, list):
        node[last] = existing + [v for v in value if v not in existing]
    else:
        node[last] = value


def add_audience(claims, audience):
    if not audience:
        return
    current = claims.get("aud")
    if current is None:
        claims["aud"] = audience
    elif isinstance(current, list):
        if audience not in current:
            current.append(audience)
    elif current != audience:
        claims["aud"] = [current, audience]


# User data ------------------------------------------------------------------------------------

_PROPERTIES = {
    "id": lambda u: u.pk,
    "username": lambda u: u.username,
    "email": lambda u: u.email or None,
    "emailVerified": lambda u: u.email_verified,
    "firstName": lambda u: u.first_name or None,
    "lastName": lambda u: u.last_name or None,
    "enabled": lambda u: u.enabled,
    "createdTimestamp": lambda u: int(u.created.timestamp() * 1000),
}


def user_attribute_values(user, name):
    if name in _PROPERTIES:
        value = _PROPERTIES[name](user)
        return [] if value is None else [value]
    value = (user.attributes or {}).get(name)
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


# Mapper types ---------------------------------------------------------------------------------

@register("oidc-usermodel-attribute-mapper")
def user_attribute(config, claims, ctx):
    values = user_attribute_values(ctx.user, config.get("user.attribute", ""))
    if values:
        set_claim(claims, config, values)


@register("oidc-usermodel-property-mapper")
def user_property(config, claims, ctx):
    getter = _PROPERTIES.get(config.get("user.attribute", ""))
    if getter is not None:
        set_claim(claims, config, getter(ctx.user))


@register("oidc-hardcoded-claim-mapper")
def hardcoded_claim(config, claims, ctx):
    set_claim(claims, config, config.get("claim.value"))


@register("oidc-full-name-mapper")
def full_name(config, claims, ctx):
    name = ctx.user.get_full_name()
    if name:
        claims["name"] = name


@register("oidc-address-mapper")
def address(config, claims, ctx):
    out = {}
    for claim, default in (("formatted", "formatted"), ("street_address", "street"), ("locality", "locality"),
                           ("region", "region"), ("postal_code", "postal_code"), ("country", "country")):
        key = "street" if claim == "street_address" else claim
        values = user_attribute_values(ctx.user, config.get(f"user.attribute.{key}", default))
        if values:
            out[claim] = values[0]
    if out:
        claims["address"] = out


def _prefixed(prefix, names):
    return [f"{prefix}{n}" for n in sorted(names)]


@register("oidc-usermodel-realm-role-mapper")
def realm_roles(config, claims, ctx):
    names = [r.name for r in ctx.roles if r.client_id is None]
    if names:
        config = {"claim.name": "realm_access.roles", "multivalued": "true", **config}
        set_claim(claims, config, _prefixed(config.get("usermodel.realmRoleMapping.rolePrefix", ""), names))


@register("oidc-usermodel-client-role-mapper")
def client_roles(config, claims, ctx):
    only = config.get("usermodel.clientRoleMapping.clientId", "")
    prefix = config.get("usermodel.clientRoleMapping.rolePrefix", "")
    by_client = {}
    for role in ctx.roles:
        if role.client_id is not None and (not only or role.client_id == only):
            by_client.setdefault(role.client_id, []).append(role.name)
    template = config.get("claim.name") or "resource_access.${client_id}.roles"
    config = {"multivalued": "true", **config}
    for client_id, names in sorted(by_client.items()):
        name = template.replace("${client_id}", client_id.replace(".", "\\."))
        set_claim(claims, config, _prefixed(prefix, names), name=name)


@register("oidc-group-membership-mapper")
def group_membership(config, claims, ctx):
    full_path = config.get("full.path", "true") == "true"
    groups = [g.path if full_path else g.name for g in ctx.user.groups.all()]
    config = {"claim.name": "groups", "multivalued": "true", **config}
    set_claim(claims, config, sorted(groups))


@register("oidc-audience-mapper", token_types=(ACCESS, ID, INTROSPECTION))
def audience(config, claims, ctx):
    add_audience(claims, config.get("included.client.audience", ""))
    add_audience(claims, config.get("included.custom.audience", ""))


@register("oidc-audience-resolve-mapper", token_types=(ACCESS, INTROSPECTION))
def audience_resolve(config, claims, ctx):
    """Every client whose roles the token carries is an audience, the client itself excepted."""
    for client_id in sorted({r.client_id for r in ctx.roles if r.client_id is not None}):
        if client_id != ctx.client.client_id:
            add_audience(claims, client_id)


@register("oidc-allowed-origins-mapper", token_types=(ACCESS, INTROSPECTION))
def allowed_origins(config, claims, ctx):
    if ctx.client_config.web_origins:
        claims["allowed-origins"] = sorted(ctx.client_config.web_origins)


@register("oidc-sub-mapper", token_types=(ACCESS, INTROSPECTION))
def sub(config, claims, ctx):
    claims["sub"] = ctx.user.pk


@register("oidc-usersessionmodel-note-mapper")
def session_note(config, claims, ctx):
    note = config.get("user.session.note", "")
    session = ctx.user_session
    if session is None:
        return
    if note == "AUTH_TIME":
        value = int(session.auth_time.timestamp())
    else:
        value = (session.notes or {}).get(note)
    set_claim(claims, config, value)


@register("oidc-session-state-mapper", token_types=(ACCESS, ID, USERINFO, INTROSPECTION))
def session_state(config, claims, ctx):
    # Keycloak 26 dropped the claim (``sid`` says the same); clients still reading it add this mapper.
    if ctx.sid:
        claims["session_state"] = ctx.sid


@register("oidc-acr-mapper", token_types=(ACCESS, ID, USERINFO, INTROSPECTION))
def acr(config, claims, ctx):
    if ctx.acr is not None:
        claims["acr"] = ctx.acr


@register("oidc-organization-membership-mapper")
def organization_membership(config, claims, ctx):
    """Keycloak's ``organization`` claim: the aliases of the user's enabled organizations, or
    with ``addOrganizationId`` / ``addOrganizationAttributes`` an object by alias holding the
    ``id`` and the attributes. Nothing while the realm has organizations off."""
    if not ctx.realm.organizations_enabled:
        return
    orgs = list(organizations.of_user(ctx.user).filter(enabled=True))
    if not orgs:
        return
    config = {"claim.name": "organization", **config}
    with_id = config.get("addOrganizationId") == "true"
    with_attributes = config.get("addOrganizationAttributes") == "true"
    if not (with_id or with_attributes):
        set_claim(claims, {"multivalued": "true", **config}, [o.alias for o in orgs])
        return
    value = {o.alias: {**({"id": o.pk} if with_id else {}), **((o.attributes or {}) if with_attributes else {})}
             for o in orgs}
    set_claim(claims, {**config, "jsonType.label": "JSON", "multivalued": "false"}, value)
