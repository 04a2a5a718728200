"""Resource indicators (RFC 8707), as Keycloak's experimental ``resource-indicators`` has them.

A ``resource`` names the API a token is for: an absolute URI without fragment (nor query, as
Keycloak refuses), or Keycloak's ``urn:client:<clientId>``; it may repeat. A URI resolves to the
realm's client (the resource server) whose attribute ``resource_url`` is exactly that URI; the
requesting client may address it when the audience Keycloak would put in its access token names
that client (an audience mapper, or the resource server's roles within the client's scope through
the ``roles`` scope's audience resolve mapper), or names the URI itself (a custom audience).
Anything else is ``invalid_target`` with Keycloak's description (docs/decisions/0074).

- Authorization endpoint: each resource is checked against the client's mappers for the requested
  scopes (the user is not known yet) and kept with the code.
- Token endpoint: the code and refresh grants may narrow the resources their grant had, never
  widen them (a grant without resources cannot gain one); client credentials may ask for any
  addressable resource. The access token's ``aud`` becomes exactly the resources, once each is
  checked against the audience the mappers give this user; the refresh token keeps the grant's
  resources (claim ``resource``), so a narrowed refresh does not lose the others.
"""
from urllib.parse import urlsplit

from realms.data import realm_cache
from realms.models import Client, Role

from . import mappers
from .errors import InvalidTarget

RESOURCE = "resource"
URN_CLIENT_PREFIX = "urn:client:"
RESOURCE_URL_ATTRIBUTE = "resource_url"
ERROR_NOT_MATCHING = "The requested resource is not matching the original request."
ERROR_INVALID_RESOURCE = "The requested resource is invalid, missing, unknown, or malformed."
MAX_RESOURCES = 10
MAX_LENGTH = 2048


def is_valid(value):
    """RFC 8707 §2: an absolute URI, no fragment; like Keycloak, no query either."""
    if not value or len(value) > MAX_LENGTH or any(c.isspace() for c in value):
        return False
    if value.startswith(URN_CLIENT_PREFIX):
        return len(value) > len(URN_CLIENT_PREFIX)
    try:
        parts = urlsplit(value)
    except ValueError:
        return False
    return bool(parts.scheme) and bool(parts.netloc or parts.path) and "#" not in value and "?" not in value


def requested(params):
    """The request's resources, in order, each once; InvalidTarget for a malformed one."""
    values = [v for v in params.getlist(RESOURCE)] if hasattr(params, "getlist") else list(params or ())
    if len(values) > MAX_RESOURCES or not all(is_valid(v) for v in values):
        raise InvalidTarget(ERROR_INVALID_RESOURCE)
    return list(dict.fromkeys(values))


def _resource_urls(config):
    """{resource_url: clientId} of the realm's clients, computed once per realm generation."""
    rows = Client.objects.filter(realm=config.realm).values_list("client_id", "attributes")
    return {attrs.get(RESOURCE_URL_ATTRIBUTE): cid for cid, attrs in rows
            if isinstance(attrs, dict) and attrs.get(RESOURCE_URL_ATTRIBUTE)}


def resource_server(realm, resource):
    """The clientId of the resource server a resource names, or None when no client is it."""
    if resource.startswith(URN_CLIENT_PREFIX):
        client_id = resource[len(URN_CLIENT_PREFIX):]
        return client_id if realm_cache.get_realm(realm.name).client(client_id) is not None else None
    return realm_cache.stored(realm, "oidc-resource-urls", lambda r: _resource_urls(
        realm_cache.get_realm(r.name))).get(resource)


def _names(audience, resource, server):
    """Whether an ``aud`` value (or list) names the resource: its server's clientId or the URI."""
    values = audience if isinstance(audience, list) else [audience] if audience else []
    return (server is not None and server in values) or (not resource.startswith(URN_CLIENT_PREFIX)
                                                         and resource in values)


def may_request(client_config, scopes, resources):
    """The authorization endpoint's check, before the user is known: every resource resolves and
    the client's access-token mappers for these scopes can name it."""
    realm = client_config.realm
    chain = client_config.mappers_for(scopes, mappers.ACCESS)
    for resource in resources:
        server = resource_server(realm, resource)
        if not _statically_addressable(client_config, scopes, chain, resource, server):
            raise InvalidTarget(ERROR_INVALID_RESOURCE)


def _statically_addressable(client_config, scopes, chain, resource, server):
    for func, config in chain:
        if func is mappers.audience:
            if _names([config.get("included.client.audience", ""), config.get("included.custom.audience", "")],
                      resource, server):
                return True
        elif func is mappers.audience_resolve and server is not None and server != client_config.client_id:
            # The audience resolve mapper names every client whose roles the token may carry.
            allowed = client_config.allowed_role_ids(scopes)
            roles = Role.objects.filter(client__realm=client_config.realm, client__client_id=server)
            if roles.exists() if allowed is None else roles.filter(pk__in=allowed).exists():
                return True
    return False


def apply(exchange, ctx, granted=None):
    """Narrow the token response of ``ctx`` to the request's resources (the token endpoint).

    ``granted``: the resources of the grant (code or refresh token), None for a grant that has
    none to keep (client credentials). Sets ``ctx.audience`` and the refresh token's claim."""
    asked = requested(exchange.params)
    if granted is not None:
        if asked and not set(asked) <= set(granted):
            raise InvalidTarget(ERROR_NOT_MATCHING)
        asked = asked or list(granted)
    if not asked:
        return
    mapped = mappers.apply_mappers(ctx.client_config.mappers_for(ctx.scopes, mappers.ACCESS), {}, ctx).get("aud")
    for resource in asked:
        if not _names(mapped, resource, resource_server(ctx.realm, resource)):
            raise InvalidTarget(ERROR_INVALID_RESOURCE)
    exchange.details[RESOURCE] = " ".join(asked)
    # Keycloak's: urn:client:<clientId> puts the clientId in aud, a URI the URI itself.
    ctx.audience = [r[len(URN_CLIENT_PREFIX):] if r.startswith(URN_CLIENT_PREFIX) else r for r in asked]
    ctx.refresh_extra_claims[RESOURCE] = list(granted) if granted else asked
