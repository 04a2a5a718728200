"""A resource server's settings (Keycloak's ResourceServerRepresentation), checked and normalised.

They are kept as one representation on the client (``Client.authorization_settings``), as
Keycloak exports them: resources (``_id``, ``name``, ``type``, ``uris``, ``owner``,
``ownerManagedAccess``, ``attributes``, ``scopes`` by name), scopes (``id``, ``name``), policies
and permissions (``id``, ``name``, ``type``, ``logic``, ``decisionStrategy``, ``config`` naming
resources, scopes and policies by name). Every policy type kept is one ``realms.authz.policies``
evaluates; anything else is refused with its JSON path, never kept to do nothing.
"""
import copy
import json
import uuid
from datetime import datetime

from django.db import transaction
from django.db.models import Q

from ..administration.admin_permissions import PERMISSIONS_CLIENT
from ..authz.evaluation import path_match
from ..authz.policies import (
    LOGICS,
    POLICY_TYPES,
    STRATEGIES,
    TIME_FORMAT,
    TIME_RANGES,
    UMA,
    config_list,
    find_client_scope,
    find_group,
    find_role,
)
from ..models import Client, Role, User
from .fields import RepresentationError, as_dict, as_list, at
from .synchronizers import forget_removed

ENFORCEMENT_MODES = ("ENFORCING", "PERMISSIVE", "DISABLED")
UMA_PROTECTION = "uma_protection"  # the client role a resource server's PAT holds
PERMISSION_TYPES = ("resource", "scope")
# Keycloak refuses JavaScript policies unless deployed as files (uploads are off by default).
SCRIPT_REFUSAL = "Script upload is disabled"
_SERVER_KEYS = {"id", "clientId", "name", "allowRemoteResourceManagement", "policyEnforcementMode",
                "decisionStrategy", "resources", "scopes", "policies"}
_RESOURCE_KEYS = {"_id", "id", "name", "displayName", "type", "uri", "uris", "icon_uri", "owner",
                  "ownerManagedAccess", "attributes", "scopes"}
_SCOPE_KEYS = {"id", "name", "displayName", "iconUri"}
_POLICY_KEYS = {"id", "name", "description", "type", "logic", "decisionStrategy", "config", "owner"}
# A policy type's config keys (their values checked where they are read), and the lists among them.
_CONFIG = {
    "user": {"users"}, "group": {"groups", "groupsClaim"}, "role": {"roles", "fetchRoles"},
    "client": {"clients"}, "client-scope": {"clientScopes"},
    "time": {"nbf", "noa", "dayMonth", "dayMonthEnd", "month", "monthEnd", "year", "yearEnd", "hour", "hourEnd",
             "minute", "minuteEnd"},
    "regex": {"targetClaim", "pattern", "targetContextAttributes"},
    "aggregate": {"applyPolicies"},
    "resource": {"resources", "applyPolicies", "defaultResourceType"},
    "scope": {"resources", "scopes", "applyPolicies"},
    UMA: {"resources", "scopes", "applyPolicies"},  # resources by id: names are unique per owner only
}


def new_id():
    return str(uuid.uuid4())


def _choice(value, allowed, path):
    if value not in allowed:
        raise RepresentationError(path, f"{value!r} is not one of {', '.join(allowed)}")
    return value


def _strings(value, path):
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise RepresentationError(path, "expected a list of strings")
    return value


def _json_list(config, key, path):
    try:
        value = config_list({"config": config}, key)
    except ValueError:
        raise RepresentationError(at(path, key), "expected a JSON list") from None
    if not isinstance(value, list):
        raise RepresentationError(at(path, key), "expected a JSON list")
    return value


def check_resource(rep, path):
    """A resource as stored: ``uri`` (Keycloak's older single URI) folded into ``uris``."""
    as_dict(rep, path)
    unknown = set(rep) - _RESOURCE_KEYS
    if unknown:
        raise RepresentationError(at(path, sorted(unknown)[0]), "not supported")
    if not isinstance(rep.get("name"), str) or not rep["name"].strip():
        raise RepresentationError(at(path, "name"), "required")
    uris = _strings(rep.get("uris", []), at(path, "uris"))
    if rep.get("uri"):
        uris = [rep["uri"], *[u for u in uris if u != rep["uri"]]]
    out = {"_id": rep.get("_id") or rep.get("id") or new_id(), "name": rep["name"], "uris": uris,
           "ownerManagedAccess": bool(rep.get("ownerManagedAccess", False)),
           "attributes": {k: _strings(v, at(at(path, "attributes"), k))
                          for k, v in as_dict(rep.get("attributes") or {}, at(path, "attributes")).items()},
           "scopes": []}
    for key in ("displayName", "type", "icon_uri"):
        if rep.get(key):
            out[key] = str(rep[key])
    for i, scope in enumerate(as_list(rep.get("scopes", []), at(path, "scopes"))):
        name = scope.get("name") if isinstance(scope, dict) else scope
        if not isinstance(name, str) or not name:
            raise RepresentationError(f"{path}.scopes[{i}]", "expected a scope with a name")
        out["scopes"].append({"name": name})
    owner = rep.get("owner")
    if isinstance(owner, dict) and (owner.get("id") or owner.get("name")):
        out["owner"] = {k: owner[k] for k in ("id", "name") if owner.get(k)}
    elif isinstance(owner, str) and owner:
        out["owner"] = {"id": owner}
    return out


def check_scope(rep, path):
    as_dict(rep, path)
    unknown = set(rep) - _SCOPE_KEYS
    if unknown:
        raise RepresentationError(at(path, sorted(unknown)[0]), "not supported")
    if not isinstance(rep.get("name"), str) or not rep["name"].strip():
        raise RepresentationError(at(path, "name"), "required")
    out = {"id": rep.get("id") or new_id(), "name": rep["name"]}
    for key in ("displayName", "iconUri"):
        if rep.get(key):
            out[key] = str(rep[key])
    return out


def check_policy(rep, path):
    """A policy or permission as stored; its names are checked against the others by ``check``."""
    as_dict(rep, path)
    kind = rep.get("type")
    if kind == "js" or (isinstance(kind, str) and kind.startswith("script-")):
        raise RepresentationError(at(path, "type"), SCRIPT_REFUSAL)
    if kind == UMA and not rep.get("owner"):
        raise RepresentationError(at(path, "type"), "policy type 'uma' is not supported here: a user-managed permission "
                                                    "is its owner's, made at the protection API's uma-policy")
    if kind not in POLICY_TYPES and kind not in PERMISSION_TYPES and kind != UMA:
        raise RepresentationError(at(path, "type"), f"policy type {kind!r} is not supported (role, group, user, client, "
                                                    "client-scope, time, regex, aggregate, resource, scope)")
    unknown = set(rep) - _POLICY_KEYS
    if unknown:
        raise RepresentationError(at(path, sorted(unknown)[0]), "not supported")
    if not isinstance(rep.get("name"), str) or not rep["name"].strip():
        raise RepresentationError(at(path, "name"), "required")
    logic = _choice(rep.get("logic", "POSITIVE"), LOGICS, at(path, "logic"))
    if (kind in PERMISSION_TYPES or kind == UMA) and logic != "POSITIVE":
        raise RepresentationError(at(path, "logic"), "a permission's decision comes from its policies: only POSITIVE")
    config = {k: v for k, v in as_dict(rep.get("config") or {}, at(path, "config")).items()}
    here = at(path, "config")
    unknown = set(config) - _CONFIG[kind]
    if unknown:
        raise RepresentationError(at(here, sorted(unknown)[0]), f"not supported in a {kind} policy")
    if kind == "group" and config.get("groupsClaim"):
        raise RepresentationError(at(here, "groupsClaim"), "groups from a token claim are not supported")
    if kind == "regex" and str(config.get("targetContextAttributes", "false")).lower() == "true":
        raise RepresentationError(at(here, "targetContextAttributes"), "context attributes are not supported")
    if kind == "time":
        _check_time(config, here)
    for key in ("users", "groups", "roles", "clients", "clientScopes", "applyPolicies", "resources", "scopes"):
        if key in config:
            _json_list(config, key, here)
    out = {"id": rep.get("id") or new_id(), "name": rep["name"], "type": kind, "logic": logic,
           "decisionStrategy": _choice(rep.get("decisionStrategy", "UNANIMOUS"), STRATEGIES,
                                       at(path, "decisionStrategy")),
           "config": config}
    if rep.get("description"):
        out["description"] = str(rep["description"])
    if rep.get("owner"):
        out["owner"] = str(rep["owner"])  # a user-managed permission's and its policies'
    return out


def _check_time(config, path):
    for key in ("nbf", "noa"):
        if config.get(key):
            try:
                datetime.strptime(config[key], TIME_FORMAT)
            except (TypeError, ValueError):
                raise RepresentationError(at(path, key), "expected yyyy-MM-dd HH:mm:ss") from None
    for start, _ in TIME_RANGES:
        for key in (start, start + "End"):
            if config.get(key) not in (None, ""):
                try:
                    int(config[key])
                except (TypeError, ValueError):
                    raise RepresentationError(at(path, key), "expected a number") from None


def check(settings, path):
    """The whole ResourceServerRepresentation of an application, normalised (ids given to what
    has none, the scopes resources name added to the scopes); names must resolve."""
    as_dict(settings, path)
    unknown = set(settings) - _SERVER_KEYS
    if unknown:
        key = sorted(unknown)[0]
        raise RepresentationError(at(path, key), "the authorization schema is the admin-permissions client's only"
                                  if key == "authorizationSchema" else "not supported")
    out = {"allowRemoteResourceManagement": bool(settings.get("allowRemoteResourceManagement", False)),
           "policyEnforcementMode": _choice(settings.get("policyEnforcementMode", "ENFORCING"), ENFORCEMENT_MODES,
                                            at(path, "policyEnforcementMode")),
           "decisionStrategy": _choice(settings.get("decisionStrategy", "UNANIMOUS"), STRATEGIES,
                                       at(path, "decisionStrategy"))}
    out["scopes"] = [check_scope(s, f"{path}.scopes[{i}]")
                     for i, s in enumerate(as_list(settings.get("scopes", []), at(path, "scopes")))]
    out["resources"] = [check_resource(r, f"{path}.resources[{i}]")
                        for i, r in enumerate(as_list(settings.get("resources", []), at(path, "resources")))]
    out["policies"] = [check_policy(p, f"{path}.policies[{i}]")
                       for i, p in enumerate(as_list(settings.get("policies", []), at(path, "policies")))]
    scope_names = {s["name"] for s in out["scopes"]}
    for resource in out["resources"]:
        for scope in resource["scopes"]:
            if scope["name"] not in scope_names:
                scope_names.add(scope["name"])
                out["scopes"].append({"id": new_id(), "name": scope["name"]})
    _unique(out["scopes"], "name", f"{path}.scopes")
    _unique([r for r in out["resources"] if "owner" not in r], "name", f"{path}.resources")
    _unique(out["policies"], "name", f"{path}.policies")
    check_references(out, path)
    return out


def _unique(items, key, path):
    seen = set()
    for item in items:
        if item[key] in seen:
            raise RepresentationError(path, f"{item[key]!r} is given twice")
        seen.add(item[key])


def check_references(settings, path):
    """Each permission's resources, scopes and policies, and each aggregate's policies, name
    ones of these settings; aggregates do not contain themselves."""
    resources = {r["name"] for r in settings["resources"]}
    resource_ids = {r["_id"] for r in settings["resources"]}
    scopes = {s["name"] for s in settings["scopes"]}
    policies = {p["name"]: p for p in settings["policies"]}
    for i, policy in enumerate(settings["policies"]):
        here = f"{path}.policies[{i}].config"
        config = policy["config"]
        named = resource_ids if policy["type"] == UMA else resources
        for key, known in (("resources", named), ("scopes", scopes), ("applyPolicies", policies)):
            for name in _json_list(config, key, here) if key in config else ():
                if name not in known:
                    raise RepresentationError(at(here, key), f"unknown {key[:-1] if key != 'applyPolicies' else 'policy'} "
                                                             f"{name!r}")
                if key == "applyPolicies" and policies[name]["type"] in (*PERMISSION_TYPES, UMA):
                    raise RepresentationError(at(here, key), f"{name!r} is a permission, not a policy")
        if policy["type"] == "scope" and not _json_list(config, "scopes", here):
            raise RepresentationError(at(here, "scopes"), "a scope permission names at least one scope")
        if policy["type"] == "resource" and bool(config.get("defaultResourceType")) == bool(
                _json_list(config, "resources", here)):
            raise RepresentationError(here, "a resource permission names either resources or a resource type")
    for name, policy in policies.items():
        _acyclic(policy, policies, [name], path)


def _acyclic(policy, policies, trail, path):
    if policy["type"] != "aggregate":
        return
    for name in config_list(policy, "applyPolicies"):
        if name in trail:
            raise RepresentationError(path, f"aggregate policy {trail[0]!r} contains itself")
        _acyclic(policies[name], policies, [*trail, name], path)


def resolve(realm, settings, path):
    """After the realm's objects exist: the groups, roles, client scopes, users and clients that
    policies name are the realm's (the policies keep the names or ids the file gave); resource
    owners are users, given by id or name (the resource server's own resources have none)."""
    for resource in settings["resources"]:
        owner = resource.get("owner")
        if owner is None:
            continue
        user = User.objects.filter(realm=realm, pk=owner.get("id", "")).first() or User.objects.filter(
            realm=realm, username=owner.get("name", "")).first()
        if user is None:
            if Client.objects.filter(realm=realm).filter(
                    Q(pk=owner.get("id", "")) | Q(client_id=owner.get("name", ""))).exists():
                del resource["owner"]  # owned by the resource server itself
                continue
            raise RepresentationError(f"{path}.resources", f"unknown owner {owner.get('name') or owner.get('id')!r}")
        resource["owner"] = {"id": user.pk, "name": user.username}
    owners = {p["owner"] for p in settings["policies"] if p.get("owner")}
    missing = owners - set(User.objects.filter(realm=realm, pk__in=owners).values_list("pk", flat=True))
    if missing:
        raise RepresentationError(f"{path}.policies", f"unknown owner {sorted(missing)[0]!r}")
    for i, policy in enumerate(settings["policies"]):
        here = f"{path}.policies[{i}].config"
        config = policy["config"]
        kind = policy["type"]
        if kind == "group":
            for entry in _json_list(config, "groups", here):
                if find_group(realm, entry) is None:
                    raise RepresentationError(at(here, "groups"), f"unknown group {entry.get('path') or entry.get('id')!r}")
        elif kind == "role":
            for entry in _json_list(config, "roles", here):
                if find_role(realm, entry.get("id", "")) is None:
                    raise RepresentationError(at(here, "roles"), f"unknown role {entry.get('id')!r}")
        elif kind == "client-scope":
            for entry in _json_list(config, "clientScopes", here):
                if find_client_scope(realm, entry.get("id", "")) is None:
                    raise RepresentationError(at(here, "clientScopes"), f"unknown client scope {entry.get('id')!r}")
        elif kind == "user":
            for ref in _json_list(config, "users", here):
                if not User.objects.filter(realm=realm).filter(Q(pk=ref) | Q(username=ref)).exists():
                    raise RepresentationError(at(here, "users"), f"unknown user {ref!r}")
        elif kind == "client":
            for ref in _json_list(config, "clients", here):
                if not Client.objects.filter(realm=realm).filter(Q(pk=ref) | Q(client_id=ref)).exists():
                    raise RepresentationError(at(here, "clients"), f"unknown client {ref!r}")
    return settings



def _follow_switch(sender, instance, **kwargs):
    """As Keycloak: a client whose authorization services are switched on (Admin API, console,
    import) is a resource server, with nothing in it yet; switched off, its settings are removed.
    The admin-permissions client's are the realm's fine-grained admin permissions, not switched."""
    if instance.client_id == PERMISSIONS_CLIENT:
        return
    if instance.authorization_services_enabled and not instance.authorization_settings:
        instance.authorization_settings = check({}, "authorizationSettings")
    elif not instance.authorization_services_enabled:
        instance.authorization_settings = {}


def _protection_role(sender, instance, created=False, **kwargs):
    """Keycloak's ``uma_protection`` client role of a resource server, held by its service
    account: what a PAT needs at the protection API. Not when the client row is new: its roles
    (an import's) and its service account come after it, and bring it."""
    if sender is Client and created:
        return
    client = instance if sender is Client else instance.service_account_client
    if client is None or not client.authorization_services_enabled or client.client_id == PERMISSIONS_CLIENT:
        return
    role, _ = Role.objects.get_or_create(realm_id=client.realm_id, client=client, name=UMA_PROTECTION)
    account = instance if sender is User else User.objects.filter(service_account_client=client).first()
    if account is not None:
        account.roles.add(role)


def connect_signals():
    from django.db.models.signals import post_save, pre_save

    pre_save.connect(_follow_switch, sender=Client, dispatch_uid="authz-resource-server-switch")
    post_save.connect(_protection_role, sender=Client, dispatch_uid="authz-uma-protection-client")
    post_save.connect(_protection_role, sender=User, dispatch_uid="authz-uma-protection-account")


# Editing a resource server (the protection API and the Admin API) ------------------------------

class NameTaken(RepresentationError):
    """A resource, scope or policy of that name exists (409 at both APIs, as Keycloak)."""


def write(client, change):
    """Apply ``change(settings)`` to the client's settings with its row locked, after forgetting
    what the realm no longer has (``forget_removed``); what ``change`` returns."""
    with transaction.atomic():
        locked = Client.objects.select_for_update().select_related("realm").get(pk=client.pk)
        settings = copy.deepcopy(locked.authorization_settings)
        if settings:
            forget_removed(locked.realm, settings)
        result = change(settings)
        locked.authorization_settings = settings
        locked.save(update_fields=["authorization_settings"])
    client.authorization_settings = settings
    return result


def owner_of(client, resource):
    return resource.get("owner") or {"id": client.pk, "name": client.client_id}


def resource_rep(client, resource):
    """A resource as Keycloak's APIs show it (``resource_scopes`` is UMA's name of its scopes)."""
    return {**resource, "owner": owner_of(client, resource), "resource_scopes": resource["scopes"]}


def resource_from_rep(client, body, existing=None):
    """A resource from a ResourceRepresentation (replacing ``existing``: its id and owner kept).
    ``owner`` is a user of the realm (id or username) or the resource server itself."""
    if not isinstance(body, dict):
        raise RepresentationError("", "expected a ResourceRepresentation")
    given = body
    body = {k: v for k, v in given.items() if k not in ("_id", "id", "owner", "resource_scopes")}
    if "scopes" not in body and isinstance(given.get("resource_scopes"), list):
        body["scopes"] = given["resource_scopes"]
    resource = check_resource(body, "")
    owner = existing.get("owner") if existing is not None else _owner(client, given.get("owner"))
    if existing is not None:
        resource["_id"] = existing["_id"]
    if owner:
        resource["owner"] = owner
    return resource


def _owner(client, owner):
    ref = (owner.get("id") or owner.get("name")) if isinstance(owner, dict) else owner
    if ref in (None, "", client.pk, client.client_id):
        return None
    user = User.objects.filter(realm=client.realm_id).filter(Q(pk=ref) | Q(username=ref)).first()
    if user is None:
        raise RepresentationError("owner", f"unknown owner {ref!r}")
    return {"id": user.pk, "name": user.username}


def store_resource(settings, resource):
    """Add ``resource`` to ``settings`` or replace the one of its id; its new scopes join the
    server's. Names are unique per owner."""
    owner = resource.get("owner", {}).get("id")
    if any(r["name"] == resource["name"] and r.get("owner", {}).get("id") == owner and r["_id"] != resource["_id"]
           for r in settings["resources"]):
        raise NameTaken("name", f"Resource with name [{resource['name']}] already exists.")
    names = {s["name"] for s in settings["scopes"]}
    settings["scopes"] += [{"id": new_id(), "name": s["name"]} for s in resource["scopes"] if s["name"] not in names]
    if any(r["_id"] == resource["_id"] for r in settings["resources"]):
        settings["resources"] = [resource if r["_id"] == resource["_id"] else r for r in settings["resources"]]
    else:
        settings["resources"].append(resource)


def remove_resource(settings, resource_id):
    """The resource goes, and with it the permissions' mentions of it (Keycloak's associations)
    and its owner's user-managed permissions."""
    gone = next(r for r in settings["resources"] if r["_id"] == resource_id)
    settings["resources"] = [r for r in settings["resources"] if r["_id"] != resource_id]
    if not any(r["name"] == gone["name"] for r in settings["resources"]):
        _forget(settings, "resources", gone["name"])
    for policy in [p for p in settings["policies"] if p["type"] == UMA and resource_id in config_list(p, "resources")]:
        remove_uma_policy(settings, policy["id"])


def merge(realm, settings, incoming):
    """Keycloak's import of a ResourceServerRepresentation into a resource server (the Admin
    API's ``resource-server/import``): its enforcement mode, decision strategy and remote
    management replace these; its scopes (by name), resources (by name and owner) and policies
    (by name) replace those of the same name, keeping their ids, or are added; nothing is
    removed."""
    given = resolve(realm, check(incoming, "authorizationSettings"), "authorizationSettings")
    for key in ("policyEnforcementMode", "decisionStrategy", "allowRemoteResourceManagement"):
        settings[key] = given[key]
    for key, id_key, same in (("scopes", "id", lambda i: i["name"]),
                              ("resources", "_id", lambda i: (i["name"], i.get("owner", {}).get("id"))),
                              ("policies", "id", lambda i: i["name"])):
        held = {same(item): item for item in settings[key]}
        for item in given[key]:
            if same(item) in held:
                item[id_key] = held[same(item)][id_key]
                settings[key] = [item if same(old) == same(item) else old for old in settings[key]]
            else:
                settings[key].append(item)
    check_references(settings, "authorizationSettings")


def _forget(settings, key, name):
    for policy in settings["policies"]:
        names = config_list(policy, key) if key in policy["config"] else []
        if name in names:
            policy["config"][key] = json.dumps([n for n in names if n != name], separators=(",", ":"))


def matching_resources(client, resources, query):
    """The resources a query names (Keycloak's ``name`` (``exactName``), ``uri``, ``owner``,
    ``type`` and ``scope`` filters); with ``matchingUri=true`` and no resource of that URI, the
    one whose URI pattern matches it best (``realms.authz.evaluation.path_match``)."""
    found = _matching(client, resources, query)
    if found or not query.get("uri") or query.get("matchingUri") != "true":
        return found
    ranked = [(rank, r) for r in _matching(client, resources, {k: v for k, v in query.items() if k != "uri"})
              for pattern in r.get("uris", ()) if (rank := path_match(pattern, query["uri"])) is not None]
    return [max(ranked, key=lambda found: found[0])[1]] if ranked else []


def _matching(client, resources, query):
    def matches(resource):
        name = query.get("name")
        if name and (resource["name"] != name if query.get("exactName") == "true"
                     else name.lower() not in resource["name"].lower()):
            return False
        if query.get("uri") and query["uri"] not in resource.get("uris", []):
            return False
        if query.get("type") and resource.get("type") != query["type"]:
            return False
        if query.get("scope") and query["scope"] not in [s["name"] for s in resource["scopes"]]:
            return False
        owner = owner_of(client, resource)
        return not query.get("owner") or query["owner"] in (owner.get("id"), owner.get("name"))
    return [r for r in resources if matches(r)]


# User-managed permissions (the protection API's uma-policy, Keycloak's UserManagedPermissionService)

# Keycloak's UmaPermissionRepresentation: its subject lists and the policy each becomes (the
# policy's config key and how one entry is kept).
_UMA_SUBJECTS = {"roles": ("role", "roles", lambda ref: {"id": ref, "required": False}),
                 "groups": ("group", "groups", lambda path: {"path": path, "extendChildren": False}),
                 "clients": ("client", "clients", str), "users": ("user", "users", str)}


def uma_policy_from_rep(realm, settings, resource, owner_id, body, existing=None):
    """A user-managed permission of ``owner_id`` on ``resource`` from Keycloak's
    UmaPermissionRepresentation (``roles`` by name or ``clientId/name``, ``groups`` by path,
    ``clients`` by clientId, ``users`` by username; ``scopes`` of the resource, all of them when
    none): a ``uma`` permission applying one policy per kind of subject, each owned by the user
    (Keycloak's UMAPolicyProviderFactory), stored into ``settings``; what it returns."""
    if not isinstance(body, dict):
        raise RepresentationError("", "Failed to parse representation")
    if body.get("condition"):
        raise RepresentationError("condition", SCRIPT_REFUSAL)
    held = [s["name"] for s in resource["scopes"]]
    scopes = _strings(body.get("scopes") or held, "scopes")
    if not set(scopes) <= set(held):
        raise RepresentationError("", f"Some of the scopes [{', '.join(scopes)}] are not valid for resource "
                                      f"[{resource['_id']}]")
    if existing is not None:
        remove_uma_policy(settings, existing["id"])
    applied = []
    for field, (kind, key, entry) in _UMA_SUBJECTS.items():
        refs = _strings(body.get(field) or [], field)
        if refs:
            name = new_id()
            applied.append(name)
            settings["policies"].append(check_policy({
                "name": name, "type": kind, "owner": owner_id,
                "config": {key: json.dumps([entry(ref) for ref in refs], separators=(",", ":"))}}, ""))
    policy = check_policy({
        "id": existing["id"] if existing else new_id(), "name": body.get("name"), "type": UMA, "owner": owner_id,
        "description": body.get("description"), "decisionStrategy": body.get("decisionStrategy", "UNANIMOUS"),
        "config": {"resources": json.dumps([resource["_id"]]), "scopes": json.dumps(scopes),
                   "applyPolicies": json.dumps(applied)}}, "")
    if any(p["name"] == policy["name"] for p in settings["policies"]):
        raise NameTaken("name", f"Policy with name [{policy['name']}] already exists")
    settings["policies"].append(policy)
    try:
        check_references(settings, "")
        resolve(realm, settings, "")
    except RepresentationError as exc:
        raise RepresentationError("", exc.message) from None  # a path into the settings means nothing to the caller
    return policy


def uma_policy_rep(settings, policy):
    """Keycloak's UmaPermissionRepresentation of a stored user-managed permission."""
    out = {k: policy[k] for k in ("id", "name", "description", "type", "logic", "decisionStrategy", "owner")
           if k in policy}
    out["scopes"] = config_list(policy, "scopes")
    by_name = {p["name"]: p for p in settings["policies"]}
    for field, (kind, key, _) in _UMA_SUBJECTS.items():
        for name in config_list(policy, "applyPolicies"):
            if by_name[name]["type"] == kind:
                entries = config_list(by_name[name], key)
                out[field] = [e.get("id") or e.get("path") if isinstance(e, dict) else e for e in entries]
    return out


def remove_uma_policy(settings, policy_id):
    """A user-managed permission goes with the policies it applies (Keycloak's onRemove)."""
    gone = next(p for p in settings["policies"] if p["id"] == policy_id)
    applied = set(config_list(gone, "applyPolicies"))
    settings["policies"] = [p for p in settings["policies"] if p["id"] != policy_id and p["name"] not in applied]
