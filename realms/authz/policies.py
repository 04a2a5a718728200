"""The policy language of Authorization Services, shared by applications' resource servers
(``realms.authz.evaluation``) and fine-grained admin permissions
(``realms.administration.admin_permissions``): one evaluator for both.

A policy is its representation as Keycloak exports it (``type``, ``logic``, ``decisionStrategy``,
``config`` whose lists are JSON strings). An identity offers ``user``, ``client_id`` (the client
acting, a token's ``azp``), ``roles()`` and ``group_ids()``; the client-scope and regex policies
also read ``scopes`` (the token's scope names) and ``claims`` (the token's claims), which only
an application's identity has (admin permissions take user, group, role and client policies).
"""
import json
import re
from datetime import UTC, datetime

from ..data import realm_cache
from ..models import Client, ClientScope, Group, Role

STRATEGIES = ("UNANIMOUS", "AFFIRMATIVE", "CONSENSUS")
LOGICS = ("POSITIVE", "NEGATIVE")
UMA = "uma"  # a user-managed permission (Keycloak's UMA policy): an owner's on one of their resources
# Keycloak's TimePolicyProvider: the date format of nbf and noa, and the ranges it checks.
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
TIME_RANGES = (("dayMonth", "day"), ("month", "month"), ("year", "year"), ("hour", "hour"), ("minute", "minute"))


def config_list(policy, key):
    value = (policy.get("config") or {}).get(key) or "[]"
    return json.loads(value) if isinstance(value, str) else value


def combine(strategy, outcomes):
    """Keycloak's decision strategies over the outcomes of a permission's (or an aggregate's)
    policies; nothing to decide denies."""
    if not outcomes:
        return False
    if strategy == "AFFIRMATIVE":
        return any(outcomes)
    if strategy == "CONSENSUS":
        return sum(outcomes) > len(outcomes) - sum(outcomes)
    return all(outcomes)


def evaluate(identity, realm, policy, policies=None):
    """The policy's outcome for ``identity``, its logic applied. ``policies`` (name -> policy)
    resolves an aggregate's ``applyPolicies``."""
    granted = POLICY_TYPES[policy["type"]](identity, realm, policy, policies or {})
    return granted if policy.get("logic", "POSITIVE") == "POSITIVE" else not granted


def _user(identity, realm, policy, policies):
    wanted = set(config_list(policy, "users"))
    return identity.user.pk in wanted or identity.user.username in wanted


def _group(identity, realm, policy, policies):
    mine = identity.group_ids()
    tree = realm_cache.group_tree(realm)
    for entry in config_list(policy, "groups"):
        group_id = entry.get("id") or tree.ids.get("/" + "/".join(n for n in str(entry.get("path", "")).split("/")
                                                                  if n))
        if group_id in mine:
            return True
        if group_id is not None and entry.get("extendChildren") and mine & tree.descendants(group_id):
            return True
    return False


def _held(entries, has):
    """Keycloak's role and client-scope policies: every ``required`` entry held, and at least one."""
    any_held = False
    for entry in entries:
        held = has(entry.get("id", ""))
        if entry.get("required") and not held:
            return False
        any_held = any_held or held
    return any_held


def _role(identity, realm, policy, policies):
    """The roles held, by id, by a realm role's name or as ``clientId/name`` (the export's
    references), from the identity's roles: no query."""
    held = set()
    for role in identity.roles():
        held.update((role.pk, role.name if role.client_id is None else f"{role.client.client_id}/{role.name}"))
    return _held(config_list(policy, "roles"), lambda ref: ref in held)


def _client(identity, realm, policy, policies):
    wanted = set(config_list(policy, "clients"))
    ids = realm_cache.stored(realm, "authz-client-ids", lambda r: dict(
        Client.objects.filter(realm=r).values_list("client_id", "pk")))
    return identity.client_id in wanted or ids.get(identity.client_id) in wanted


def _client_scope(identity, realm, policy, policies):
    names = realm_cache.stored(realm, "authz-client-scope-names", _client_scope_names)
    return _held(config_list(policy, "clientScopes"), lambda ref: names.get(ref) in identity.scopes)


def _client_scope_names(realm):
    """{id or name: name} of the realm's client scopes, read once per realm configuration (twice
    per entry before): an id first, as ``find_client_scope`` looks."""
    rows = list(ClientScope.objects.filter(realm=realm).values_list("pk", "name"))
    return {**{name: name for _, name in rows}, **{pk: name for pk, name in rows}}


def _time(identity, realm, policy, policies):
    """Keycloak's time policy, in UTC: not before ``nbf``, not after ``noa``, and within each
    range given (``hour`` to ``hourEnd`` ...; a start alone must match exactly)."""
    config = policy.get("config") or {}
    now = datetime.now(UTC).replace(tzinfo=None)
    if config.get("nbf") and now < datetime.strptime(config["nbf"], TIME_FORMAT):
        return False
    if config.get("noa") and now > datetime.strptime(config["noa"], TIME_FORMAT):
        return False
    for key, part in TIME_RANGES:
        start, end = config.get(key), config.get(key + "End")
        if start not in (None, ""):
            value = getattr(now, part)
            if (value < int(start) or value > int(end)) if end not in (None, "") else value != int(start):
                return False
    return True


def _regex(identity, realm, policy, policies):
    """Keycloak's regex policy: the identity's claim ``targetClaim`` (a dotted path into the
    token's claims) matches ``pattern`` whole; a list matches when one of its values does."""
    config = policy.get("config") or {}
    value = identity.claims
    for part in str(config.get("targetClaim", "")).split("."):
        value = value.get(part) if isinstance(value, dict) else None
    values = value if isinstance(value, list) else [] if value is None else [value]
    pattern = re.compile(config.get("pattern", ""))
    return any(pattern.fullmatch(str(v)) for v in values)


def _aggregate(identity, realm, policy, policies):
    return combine(policy.get("decisionStrategy", "UNANIMOUS"),
                   [evaluate(identity, realm, policies[name], policies) for name in config_list(policy, "applyPolicies")])


POLICY_TYPES = {"user": _user, "group": _group, "role": _role, "client": _client, "client-scope": _client_scope,
                "time": _time, "regex": _regex, "aggregate": _aggregate}


def find_group(realm, entry):
    """A group policy's entry: ``{"id": ...}`` or ``{"path": "/a/b"}``."""
    if entry.get("id"):
        return Group.objects.filter(realm=realm, pk=entry["id"]).first()
    group = None
    for name in [n for n in str(entry.get("path", "")).split("/") if n]:
        group = Group.objects.filter(realm=realm, parent=group, name=name).first()
        if group is None:
            return None
    return group


def find_role(realm, ref):
    """A role policy's role: its id, a realm role's name, or ``clientId/name`` (as exported)."""
    role = Role.objects.filter(realm=realm, pk=ref).select_related("client").first()
    if role is not None:
        return role
    client_id, sep, name = ref.rpartition("/")
    if sep:
        return Role.objects.filter(realm=realm, client__client_id=client_id, name=name).first()
    return Role.objects.filter(realm=realm, client=None, name=ref).first()


def find_client_scope(realm, ref):
    """A client-scope policy's scope: its id or its name."""
    return (ClientScope.objects.filter(realm=realm, pk=ref).first()
            or ClientScope.objects.filter(realm=realm, name=ref).first())
