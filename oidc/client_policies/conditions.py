"""Client policy conditions (Keycloak's provider ids and configuration keys). A condition answers
True (the client is in), False (it is not) or None (it has no say at this event: Keycloak's
ABSTAIN); ``is-negative-logic`` turns a True into a False and back."""
import json

from realms.representation import RepresentationError
from realms.representation.fields import as_bool, at

from .events import (
    AUTHORIZATION_REQUEST,
    BACKCHANNEL_TOKEN_REQUEST,
    DEVICE_TOKEN_REQUEST,
    PUSHED_AUTHORIZATION_REQUEST,
    REGISTER,
    RESOURCE_OWNER_PASSWORD_CREDENTIALS_REQUEST,
    SERVICE_ACCOUNT_TOKEN_REQUEST,
    TOKEN_EXCHANGE_REQUEST,
    TOKEN_REFRESH,
    TOKEN_REQUEST,
    UPDATE,
)

NEGATIVE = "is-negative-logic"
# Keycloak's ClientUpdateContextConditionFactory values: who writes the client.
UPDATER_SOURCES = ("ByInitialAccessToken", "ByRegistrationAccessToken", "ByAuthenticatedUser", "ByAnonymous")
ACCESS_TYPES = ("confidential", "public", "bearer-only")
SCOPE_TYPES = ("Default", "Optional", "Any")
_WRITE = (REGISTER, UPDATE)
# Where Keycloak's conditions have no say (they abstain): client-access-type at these...
_ACCESS_TYPE_ABSTAINS = (PUSHED_AUTHORIZATION_REQUEST, BACKCHANNEL_TOKEN_REQUEST, DEVICE_TOKEN_REQUEST)
# ... client-scopes outside these...
_SCOPE_EVENTS = (AUTHORIZATION_REQUEST, TOKEN_REQUEST, SERVICE_ACCOUNT_TOKEN_REQUEST, BACKCHANNEL_TOKEN_REQUEST,
                 TOKEN_EXCHANGE_REQUEST)
# ... and grant-type outside these (the grant each names; the authorization request's: its flow's).
_GRANT_OF_EVENT = {TOKEN_REFRESH: "refresh_token", RESOURCE_OWNER_PASSWORD_CREDENTIALS_REQUEST: "password",
                   SERVICE_ACCOUNT_TOKEN_REQUEST: "client_credentials",
                   TOKEN_EXCHANGE_REQUEST: "urn:ietf:params:oauth:grant-type:token-exchange",
                   DEVICE_TOKEN_REQUEST: "urn:ietf:params:oauth:grant-type:device_code"}


def _strings(config, key, path, default=(), allowed=None):
    value = config.get(key, list(default))
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise RepresentationError(at(path, f"configuration.{key}"), "expected a list of strings")
    for v in value:
        if allowed is not None and v not in allowed:
            raise RepresentationError(at(path, f"configuration.{key}"),
                                      f"unsupported value {v!r} (one of {', '.join(allowed)})")
    return value


def _check(keys, aliases=()):
    def check(config, path):
        unknown = sorted(set(config) - set(keys) - set(aliases) - {NEGATIVE})
        if unknown:
            raise RepresentationError(at(path, f"configuration.{unknown[0]}"), "not a setting of this condition")
        out = {key: parse(config, path) for key, parse in keys.items()}
        if NEGATIVE in config:
            out[NEGATIVE] = as_bool(config[NEGATIVE], at(path, f"configuration.{NEGATIVE}"))
        return out
    return check


def _access_type(client):
    if client.bearer_only:
        return "bearer-only"
    return "public" if client.public_client else "confidential"


def _requested_scopes(ctx):
    authz = ctx.get("authz")
    scope = authz.scope if authz is not None else (ctx.get("params") or {}).get("scope", "")
    return set((scope or "").split())


def _client_attributes(config, path):
    value = config.get("attributes", [])
    if isinstance(value, str):  # Keycloak's admin console keeps the list as a JSON string
        try:
            value = json.loads(value)
        except ValueError:
            raise RepresentationError(at(path, "configuration.attributes"), "not JSON") from None
    if not isinstance(value, list) or not all(isinstance(v, dict) and isinstance(v.get("key"), str)
                                              and isinstance(v.get("value"), str) for v in value):
        raise RepresentationError(at(path, "configuration.attributes"), 'expected [{"key": ..., "value": ...}]')
    return [{"key": v["key"], "value": v["value"]} for v in value]


def _scope_type(config, path):
    value = config.get("type", "Default")
    if value not in SCOPE_TYPES:
        raise RepresentationError(at(path, "configuration.type"), f"expected one of {', '.join(SCOPE_TYPES)}")
    return value


def _grant_types(config, path):
    # Keycloak reads grantTypes, and grant_types as its alias.
    return _strings(config, "grantTypes" if "grantTypes" in config else "grant_types", path)


def any_client(config, event, client, ctx):
    return True


def access_type(config, event, client, ctx):
    if event in _ACCESS_TYPE_ABSTAINS:
        return None
    return _access_type(client) in config["type"]


def client_roles(config, event, client, ctx):
    if client.pk is None:
        return False  # being registered: it has no role yet
    client_config = ctx.get("client_config")
    if client_config is None:  # a client being written: read once, not cached
        return client.roles.filter(name__in=config["roles"]).exists()
    roles = ctx["realm_config"].base.roles_by_id()  # cached with the realm: no query per request
    return any(roles[pk].name in config["roles"] for pk in client_config.own_role_ids if pk in roles)


def client_scopes(config, event, client, ctx):
    if event not in _SCOPE_EVENTS:
        return None
    wanted = set(config["scopes"])
    client_config = ctx["client_config"]
    default = bool(wanted & {s.name for s in client_config.default_scopes})
    optional = bool(wanted & set(client_config.optional_scopes) & _requested_scopes(ctx))
    return {"Default": default, "Optional": optional, "Any": default or optional}[config["type"]]


def updater_context(config, event, client, ctx):
    if event not in _WRITE:
        return None
    return ctx.get("updater") in config["update-client-source"]


def client_attributes(config, event, client, ctx):
    attributes = client.attributes or {}
    wanted = config["attributes"]  # none configured matches no client, as in Keycloak
    return bool(wanted) and all(attributes.get(a["key"]) == a["value"] for a in wanted)


def grant_type(config, event, client, ctx):
    if event == AUTHORIZATION_REQUEST:
        response_type = set(ctx["authz"].response_type.split())
        grants = {"authorization_code"} if "code" in response_type else set()
        if response_type & {"token", "id_token"}:
            grants.add("implicit")
        return bool(grants & set(config["grantTypes"]))
    if event not in _GRANT_OF_EVENT:
        return None
    return _GRANT_OF_EVENT[event] in config["grantTypes"]


# provider id -> (check of the configuration, evaluation)
CONDITIONS = {
    "any-client": (_check({}), any_client),
    "client-access-type": (_check({"type": lambda c, p: _strings(c, "type", p, allowed=ACCESS_TYPES)}),
                           access_type),
    "client-roles": (_check({"roles": lambda c, p: _strings(c, "roles", p)}), client_roles),
    "client-scopes": (_check({"scopes": lambda c, p: _strings(c, "scopes", p), "type": _scope_type}),
                      client_scopes),
    "client-updater-context": (_check({"update-client-source": lambda c, p: _strings(
        c, "update-client-source", p, allowed=UPDATER_SOURCES)}), updater_context),
    "client-attributes": (_check({"attributes": _client_attributes}), client_attributes),
    "grant-type": (_check({"grantTypes": _grant_types}, aliases=("grant_types",)), grant_type),
}


def evaluate(condition, event, client, ctx):
    config = condition["configuration"]
    verdict = CONDITIONS[condition["condition"]][1](config, event, client, ctx)
    if verdict is None or not config.get(NEGATIVE):
        return verdict
    return not verdict
