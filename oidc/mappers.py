"""Protocol mappers: each writes one claim into a token, keyed by Keycloak's mapper type names and
reading Keycloak's config keys, so imported realms behave as they did in Keycloak.

A mapper applies to a token type when its config says so: ``access.token.claim`` and
``introspection.token.claim`` default to true when absent (Keycloak's backwards compatibility),
``id.token.claim`` to false, ``userinfo.token.claim`` to the ID-token setting. Other apps may
register more types with ``register``.
"""
import functools
import hashlib
import json
import uuid
from urllib.parse import urlsplit

from realms.data import realm_cache
from realms.http import outbound
from realms.registry import Registry
from realms.sso import sessions
from realms.users import organizations

ACCESS, ID, USERINFO, INTROSPECTION = "access", "id", "userinfo", "introspection"
_CONFIG_KEY = {ACCESS: "access.token.claim", ID: "id.token.claim", USERINFO: "userinfo.token.claim",
               INTROSPECTION: "introspection.token.claim"}

REGISTRY = Registry("protocol mappers")


def register(type_name, *, token_types=(ACCESS, ID, USERINFO, INTROSPECTION), edits_roles=False):
    """``edits_roles``: the mapper changes the roles in effect (``ctx.roles``) rather than writing a
    claim, so it runs before every other mapper of the token, whatever its include-in-token
    settings (Keycloak's HardcodedRole and RoleNameMapper priorities)."""
    def wrap(func):
        REGISTRY.add(type_name, (func, frozenset(token_types), edits_roles))
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
    first, out = [], []
    for mapper in mappers:
        entry = REGISTRY.get(mapper.protocol_mapper)
        if entry is None:
            continue  # refused where mappers are written (check_mapper); rows from before that check
        func, token_types, edits_roles = entry
        if token_type not in token_types:
            continue
        if edits_roles:
            first.append((func, mapper.config))
        elif applies(mapper.config, token_type):
            out.append((func, mapper.config))
    return first + out


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
    if config.get("full.path", "true") == "true":
        # The realm's cached paths, not a parent read per level (``Group.path``); a group made in
        # another process within the last second may not be there yet, and reads its own.
        paths = realm_cache.group_tree(ctx.realm).paths
        groups = [paths.get(g.pk) or g.path for g in ctx.user.groups.all()]
    else:
        groups = [g.name for g in ctx.user.groups.all()]
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
    claims["sub"] = ctx.subject


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


# Roles in effect -----------------------------------------------------------------------------------

class _AddedRole:
    """A role a mapper puts in effect, named as role claims name it (no row behind it)."""

    __slots__ = ("id", "name", "client_id")

    def __init__(self, client_id, name):
        self.id, self.name, self.client_id = None, name, client_id


def _parse_role(value):
    """Keycloak's ``clientId.role`` notation (split at the last dot), or a realm role."""
    client_id, dot, name = (value or "").rpartition(".")
    return (client_id, name) if dot else (None, value or "")


def _with_role(roles, client_id, name):
    if any(r.client_id == client_id and r.name == name for r in roles):
        return roles
    return roles | {_AddedRole(client_id, name)}


@register("oidc-hardcoded-role-mapper", token_types=(ACCESS,), edits_roles=True)
def hardcoded_role(config, claims, ctx):
    """The role named by ``role`` is in effect for the token, held or not."""
    client_id, name = _parse_role(config.get("role"))
    if name:
        ctx.roles = _with_role(ctx.roles, client_id, name)


@register("oidc-role-name-mapper", token_types=(ACCESS, USERINFO, INTROSPECTION), edits_roles=True)
def role_name(config, claims, ctx):
    """A held role ``role`` appears as ``new.role.name`` (``clientId.role`` moves it to that client)."""
    client_id, name = _parse_role(config.get("role"))
    new_client_id, new_name = _parse_role(config.get("new.role.name"))
    held = {r for r in ctx.roles if r.client_id == client_id and r.name == name}
    if held and new_name:
        ctx.roles = _with_role(ctx.roles - held, new_client_id, new_name)


# The nonce and the ``claims`` request parameter (OIDC Core §5.5) ---------------------------------

@register("oidc-nonce-backwards-compatible-mapper", token_types=(ACCESS,))
def nonce(config, claims, ctx):
    """The authorization request's nonce in the access token too, as before Keycloak 25."""
    if ctx.nonce:
        claims["nonce"] = ctx.nonce


CLAIMS_NOTE = "claims"  # the client session note with the authorization request's ``claims`` parameter


def requested_claims(ctx, member):
    """The ``claims`` parameter's ``id_token`` or ``userinfo`` member ({} when absent or unreadable)."""
    client_session = ctx.client_session
    if client_session is None and ctx.user_session is not None:  # userinfo reads it only for this
        client_session = sessions.client_session_of(ctx.user_session, ctx.client)
    notes = client_session.notes if client_session is not None else None
    try:
        parsed = json.loads((notes or {}).get(CLAIMS_NOTE) or "{}")
    except ValueError:
        return {}
    found = parsed.get(member) if isinstance(parsed, dict) else None
    return found if isinstance(found, dict) else {}


def _essential(request):
    return isinstance(request, dict) and request.get("essential") is True


# Keycloak's ClaimsParameterTokenMapper: the standard claims it writes when essential, from where.
_REQUESTABLE = {"given_name": "firstName", "family_name": "lastName", "preferred_username": "username",
                "email": "email"}


@register("oidc-claims-param-token-mapper", token_types=(ID, USERINFO))
def claims_parameter(config, claims, ctx):
    """Standard claims the ``claims`` parameter asks for as essential, in the ID token or userinfo
    (the member matching the response): name, given_name, family_name, preferred_username, email."""
    requested = requested_claims(ctx, "id_token" if claims.get("typ") == "ID" else "userinfo")
    if _essential(requested.get("name")):
        full_name(config, claims, ctx)
    for claim, attribute in _REQUESTABLE.items():
        if _essential(requested.get(claim)):
            values = user_attribute_values(ctx.user, attribute)
            if values:
                claims[claim] = str(values[0])


@register("oidc-claims-param-value-idtoken-mapper", token_types=(ID,))
def claims_parameter_value(config, claims, ctx):
    """The claim named ``claim.name`` in the ID token with the value the ``claims`` parameter gives
    it, when requested as essential with a ``value`` (Keycloak's ClaimsParameterWithValueIdTokenMapper)."""
    name = config.get("claim.name")
    requested = requested_claims(ctx, "id_token").get(name) if name else None
    if not _essential(requested) or requested.get("value") is None or isinstance(requested["value"], (dict, list)):
        return
    value = requested["value"]
    set_claim(claims, {"claim.name": name}, str(value).lower() if isinstance(value, bool) else str(value))


# Pairwise subjects (OIDC Core §8.1) ---------------------------------------------------------------

PAIRWISE = "oidc-sha256-pairwise-sub-mapper"
SECTOR_IDENTIFIER_URI, SALT = "sectorIdentifierUri", "pairwiseSubAlgorithmSalt"


def pairwise_subject(sector_identifier, local_sub, salt):
    """Keycloak's SHA256PairwiseSubMapper: SHA-256 over the UTF-8 bytes of the sector host, the
    user id and the salt, then Java's ``UUID.nameUUIDFromBytes`` of that digest (an MD5 name-based
    UUID, version 3), so a client migrated from Keycloak keeps its users' ``sub`` values."""
    digest = hashlib.sha256(f"{sector_identifier}{local_sub}{salt}".encode()).digest()
    return str(uuid.UUID(bytes=hashlib.md5(digest).digest(), version=3))  # noqa: S324 -- Keycloak's algorithm


def _redirect_uris(root_url, redirect_uris):
    """The client's redirect URIs, relative ones resolved against its root URL (dropped without one)."""
    out = set()
    for uri in redirect_uris or ():
        if uri.startswith("/"):
            uri = f"{root_url}{uri}" if root_url else ""
        if uri.strip():
            out.add(uri)
    return out


def sector_identifier(config, root_url, redirect_uris):
    """The host the subjects of a client are computed for: the sector identifier URI's, else the
    one host all redirect URIs share; None when neither exists."""
    uri = config.get(SECTOR_IDENTIFIER_URI)
    if uri:
        return urlsplit(uri).hostname
    hosts = {urlsplit(u).hostname for u in _redirect_uris(root_url, redirect_uris)}
    return hosts.pop() if len(hosts) == 1 and None not in hosts else None


def _listed(sector_redirects, uri):
    """Keycloak's matching of a client redirect URI against the sector document's list: equal,
    or a trailing ``*`` (without a query) matches as a prefix, the query of ``uri`` ignored."""
    for entry in sector_redirects:
        if entry.endswith("*") and "?" not in entry:
            bare = uri.split("?", 1)[0]
            prefix = entry[:-1]
            if bare.startswith(prefix) or (prefix.endswith("/") and bare == prefix[:-1]):
                return True
        elif entry == uri:
            return True
    return False


def check_pairwise(config, root_url, redirect_uris):
    """The refusal of a pairwise mapper's configuration for a client, or None. The sector
    identifier URI is fetched through the SSRF guard and must list every redirect URI; without
    one, the redirect URIs must share one host."""
    uri = config.get(SECTOR_IDENTIFIER_URI)
    redirects = _redirect_uris(root_url, redirect_uris)
    if not uri:
        hosts = {urlsplit(u).hostname for u in redirects}
        if not hosts or None in hosts:
            return "Client redirect URIs must contain a valid host component."
        if len(hosts) > 1:
            return "Without a configured Sector Identifier URI, client redirect URIs must not contain multiple host components."
        return None
    parts = urlsplit(uri)
    if not parts.scheme or not parts.hostname:
        return "Invalid Sector Identifier URI."
    try:
        listed = outbound.fetch_json(uri)
    except outbound.OutboundError as exc:
        return f"Failed to get redirect URIs from the Sector Identifier URI: {exc}"
    if not isinstance(listed, list) or not all(isinstance(u, str) for u in listed):
        return "Failed to get redirect URIs from the Sector Identifier URI: not a JSON array of URIs"
    if not all(_listed(listed, u) for u in redirects):
        return "Client redirect URIs does not match redirect URIs fetched from the Sector Identifier URI."
    return None


@register(PAIRWISE, token_types=(ACCESS, INTROSPECTION))
def pairwise(config, claims, ctx):
    """The access token's ``sub``; ID token, userinfo and logout tokens take theirs from
    ``ClientConfig.subject`` directly, so every token of the client names the user alike."""
    claims["sub"] = ctx.subject


def check_mapper(type_name, config, client):
    """The refusal of an OIDC mapper about to be stored, or None: a type this server does not
    implement (never stored, so never silently without effect), a pairwise mapper whose sector
    the client's redirect URIs do not fit. Completes the config: a pairwise mapper without a salt
    gets one, as in Keycloak. ``client``: the owning client, None for a client scope."""
    if type_name not in REGISTRY:
        return f"Unsupported protocol mapper type {type_name!r}"
    if type_name == PAIRWISE:
        if not (config.get(SALT) or "").strip():
            config[SALT] = str(uuid.uuid4())
        if client is not None:
            return check_pairwise(config, client.root_url, client.redirect_uris)
    return None
