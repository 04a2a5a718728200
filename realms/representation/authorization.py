"""A client's ``authorizationSettings``: the fine-grained admin permissions of the realm's
``admin-permissions`` client (Keycloak 26.2's schema), checked at import and kept as given so
that an export gives them back; an application's resource server (``resource_server``
checks and normalises it, ``realms.authz.evaluation`` decides by it). What
``realms.administration.admin_permissions`` cannot honour in the admin permissions (policy types
other than user, group, role and client, resource types or scopes outside the schema, an
enforcement mode other than ENFORCING) fails the import with its JSON path: a permission is never
ignored; so does what an application's evaluation cannot honour (``resource_server``)."""
import json
import uuid

from django.db.models import Q

from ..administration.admin_permissions import (
    LEFT_OUT_TYPES,
    MODEL_OF,
    PERMISSIONS_CLIENT,
    POLICY_TYPES,
    SCHEMA,
    resource_type_refusal,
)
from ..authz.policies import find_group, find_role
from ..models import Client, Group, Role, User
from .fields import RepresentationError, as_dict, as_list, at
from .resource_server import check as check_resource_server
from .resource_server import resolve as resolve_resource_server

STRATEGIES = ("UNANIMOUS", "AFFIRMATIVE", "CONSENSUS")
_SUBJECTS = {"user": "users", "group": "groups", "role": "roles", "client": "clients"}  # a policy's config key
_MODELS = {"Users": User, "Groups": Group, "Clients": Client}
# Keys of a ResourceServerRepresentation that change nothing here (the admin-permissions
# client's resources are not protected through the UMA protection API).
_INERT = {"id", "clientId", "name", "allowRemoteResourceManagement", "authorizationSchema", "scopes"}


def _strategy(value, path):
    if value not in STRATEGIES:
        raise RepresentationError(path, f"decision strategy {value!r} is not one of {', '.join(STRATEGIES)}")
    return value


def _json_list(config, key, path):
    raw = config.get(key, "[]")
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        raise RepresentationError(at(path, key), "expected a JSON list") from None
    if not isinstance(value, list):
        raise RepresentationError(at(path, key), "expected a JSON list")
    return value


def parse_authorization(settings, path, client_id, p):
    """The settings of client ``client_id``, checked: the admin permissions unchanged, an
    application's normalised."""
    if client_id != PERMISSIONS_CLIENT:
        return check_resource_server(settings, path)
    as_dict(settings, path)
    unknown = set(settings) - _INERT - {"policyEnforcementMode", "decisionStrategy", "resources", "policies"}
    if unknown:
        raise RepresentationError(at(path, sorted(unknown)[0]), "not supported in fine-grained admin permissions")
    if settings.get("policyEnforcementMode", "ENFORCING") != "ENFORCING":
        raise RepresentationError(at(path, "policyEnforcementMode"), "only ENFORCING is supported")
    _strategy(settings.get("decisionStrategy", "UNANIMOUS"), at(path, "decisionStrategy"))
    names = set()
    for i, resource in enumerate(as_list(settings.get("resources", []), at(path, "resources"))):
        here = f"{path}.resources[{i}]"
        as_dict(resource, here)
        kind = resource.get("type")
        # Keycloak 26.7's resource of a type left out: it names no object, no permission may name it.
        left_out = isinstance(kind, str) and kind in LEFT_OUT_TYPES and resource.get("name") == kind
        if kind is not None and (not isinstance(kind, str) or kind not in SCHEMA) and not left_out:
            raise RepresentationError(at(here, "type"), f"unknown resource type {kind!r}")
        if resource.get("uris") or resource.get("ownerManagedAccess"):
            raise RepresentationError(here, "URIs and owner-managed access are not supported")
        names.add(resource.get("name"))
    policies = as_list(settings.get("policies", []), at(path, "policies"))
    policy_names = {p.get("name") for p in policies if isinstance(p, dict) and p.get("type") != "scope"}
    for i, policy in enumerate(policies):
        here = f"{path}.policies[{i}]"
        as_dict(policy, here)
        if not policy.get("name"):
            raise RepresentationError(at(here, "name"), "required")
        if policy.get("logic", "POSITIVE") not in ("POSITIVE", "NEGATIVE"):
            raise RepresentationError(at(here, "logic"), "expected POSITIVE or NEGATIVE")
        _strategy(policy.get("decisionStrategy", "UNANIMOUS"), at(here, "decisionStrategy"))
        config = as_dict(policy.get("config", {}), at(here, "config"))
        kind = policy.get("type")
        if kind == "scope":
            _check_permission(config, at(here, "config"), names, policy_names)
        elif kind in POLICY_TYPES:
            if kind == "group" and config.get("groupsClaim"):
                raise RepresentationError(at(at(here, "config"), "groupsClaim"), "not supported")
            _json_list(config, _SUBJECTS[kind], at(here, "config"))
        else:
            raise RepresentationError(at(here, "type"), f"policy type {kind!r} is not supported in fine-grained "
                                                        "admin permissions (user, group, role, client)")
    return settings


def _check_permission(config, path, resource_names, policy_names):
    kind = config.get("defaultResourceType")
    if not isinstance(kind, str) or kind not in SCHEMA:
        raise RepresentationError(at(path, "defaultResourceType"),
                                  resource_type_refusal(kind, f"unknown resource type {kind!r}"))
    for scope in _json_list(config, "scopes", path):
        if scope not in SCHEMA[kind]:
            raise RepresentationError(at(path, "scopes"), f"scope {scope!r} is not a scope of {kind}")
    for name in _json_list(config, "resources", path):
        if name != kind and name not in resource_names:
            raise RepresentationError(at(path, "resources"), f"unknown resource {name!r}")
    for name in _json_list(config, "applyPolicies", path):
        if name not in policy_names:
            raise RepresentationError(at(path, "applyPolicies"), f"unknown policy {name!r}")


def resolve_authorization(realm, client, settings, path, renamed):
    """After the realm's objects are written: each permission's resources name objects of its
    type in ``realm`` (ids as the file gave them, mapped by ``renamed`` {(model, file id): id} when
    the importer had to choose new ones), and each policy's groups and roles exist. An
    application's: what its policies name exists (``resource_server.resolve``)."""
    settings = json.loads(json.dumps(settings))
    if client.client_id != PERMISSIONS_CLIENT:
        return resolve_resource_server(realm, settings, path)
    for resource in settings.get("resources", []):
        for model in _MODELS.values():
            if (model, resource["name"]) in renamed:
                resource["name"] = renamed[(model, resource["name"])]
    for i, policy in enumerate(settings.get("policies", [])):
        here = f"{path}.policies[{i}].config"
        config = policy.get("config", {})
        if policy["type"] == "scope":
            kind = config["defaultResourceType"]
            model = _MODELS.get(kind)
            names = [renamed.get((model, n), n) for n in _json_list(config, "resources", here)]
            if model is not None:
                known = set(model.objects.filter(realm=realm, pk__in=names).values_list("pk", flat=True))
                missing = [n for n in names if n != kind and n not in known]
                if missing:
                    raise RepresentationError(at(here, "resources"), f"no {kind[:-1].lower()} with id {missing[0]!r}")
            config["resources"] = json.dumps(names, separators=(",", ":"))
        elif policy["type"] == "group":
            entries = _json_list(config, "groups", here)
            for entry in entries:
                if entry.get("id"):
                    entry["id"] = renamed.get((Group, entry["id"]), entry["id"])
                if find_group(realm, entry) is None:
                    raise RepresentationError(at(here, "groups"), f"unknown group {entry.get('path') or entry.get('id')!r}")
            config["groups"] = json.dumps(entries, separators=(",", ":"))
        elif policy["type"] == "role":
            for entry in _json_list(config, "roles", here):
                if find_role(realm, entry.get("id", "")) is None:
                    raise RepresentationError(at(here, "roles"), f"unknown role {entry.get('id')!r}")
    return settings


# Managing the admin-permissions client through the Admin API (Keycloak's AdminPermissionsSchema)

# Keycloak's ModelValidationException messages for the admin-permissions client.
NOT_SUPPORTED = "Not supported for this client."
TYPE_REFUSED = "Policy type not supported by feature admin-fine-grained-authz:v2"
_LOOKUPS = {"Users": (User, "username"), "Clients": (Client, "client_id"), "Groups": (Group, None),
            "Roles": (Role, None)}


def permissions_client(realm):
    """The realm's admin-permissions client, made with the schema's scopes and resource types when
    missing: Keycloak makes it when the realm's ``adminPermissionsEnabled`` is switched on, from
    the console or the Admin API."""
    client = Client.objects.filter(realm=realm, client_id=PERMISSIONS_CLIENT).first()
    if client is None:
        client = Client(realm=realm, client_id=PERMISSIONS_CLIENT, protocol="openid-connect",
                        authorization_services_enabled=True, standard_flow_enabled=False)
        client.authorization_settings = schema_settings(client, {"policyEnforcementMode": "ENFORCING",
                                                                 "decisionStrategy": "UNANIMOUS"})
        client.save()
    return client


def schema_settings(client, settings):
    """In place: what Keycloak's AdminPermissionsSchema.init gives the client (every scope of the
    schema, a resource per resource type), and ids for the resources, scopes and policies an
    import kept without one, derived from the client and the name so that every read agrees until
    a write keeps them."""
    settings.setdefault("policies", [])
    scopes = settings.setdefault("scopes", [])
    for name in sorted({s for kind in SCHEMA for s in SCHEMA[kind]} - {s.get("name") for s in scopes}):
        scopes.append({"name": name})
    resources = settings.setdefault("resources", [])
    held = {r.get("name") for r in resources}
    resources += [{"name": kind, "type": kind, "ownerManagedAccess": False, "attributes": {}, "uris": [],
                   "scopes": [{"name": s} for s in SCHEMA[kind]]} for kind in SCHEMA if kind not in held]
    for key, id_key in (("resources", "_id"), ("scopes", "id"), ("policies", "id")):
        for item in settings[key]:
            item.setdefault(id_key, str(uuid.uuid5(uuid.NAMESPACE_URL, f"{client.pk}/{key}/{item['name']}")))
    _forget_removed(client, settings)
    return settings


def _forget_removed(client, settings):
    """Keycloak's removeResourceObject, when the settings are next read: a user, group, client or
    role removed since leaves the permissions naming it, and a permission that named only removed
    objects goes (left empty it would name every object of its type); their resources go."""
    permissions = [p for p in settings["policies"] if p["type"] == "scope"]
    gone = set()
    for kind, model in MODEL_OF.items():
        named = {n for p in permissions if p["config"].get("defaultResourceType") == kind
                 for n in _json_list(p["config"], "resources", "") if n != kind}
        if named:
            gone |= named - set(model.objects.filter(realm_id=client.realm_id, pk__in=named).values_list("pk", flat=True))
    if not gone:
        return
    for p in permissions:
        names = _json_list(p["config"], "resources", "")
        if set(names) & gone:
            kept = [n for n in names if n not in gone]
            p["config"]["resources"] = json.dumps(kept, separators=(",", ":"))
            if not kept:
                settings["policies"].remove(p)
    settings["resources"] = [r for r in settings["resources"] if r["name"] not in gone]


def admin_permission(realm, settings, body, existing=None):
    """A scope permission of the admin-permissions client from Keycloak's
    ScopePermissionRepresentation (``resourceType``; ``resources``: objects of that type by id, a
    user also by username, a client by clientId, none for all of them; ``scopes`` and
    ``policies`` by id or name), in the export's shape. The resource of each object named is
    added to ``settings``, as Keycloak's getOrCreateResource."""
    kind = body.get("resourceType")
    if not isinstance(kind, str) or kind not in SCHEMA:
        raise RepresentationError("", resource_type_refusal(kind))
    if not body.get("scopes"):
        raise RepresentationError("", "Scopes not provided.")
    by_ref = {ref: s["name"] for s in settings["scopes"] for ref in (s["id"], s["name"])}
    scopes = []
    for ref in _strings(body["scopes"]):
        if ref not in by_ref:
            raise RepresentationError("", f"Scope [{ref}] does not exist.")
        if by_ref[ref] not in SCHEMA[kind]:
            raise RepresentationError("", f"Scope {by_ref[ref]} was not found for resource type {kind}.")
        scopes.append(by_ref[ref])
    objects = [_object_id(realm, kind, ref) for ref in _strings(body.get("resources") or [])]
    held = {r["name"] for r in settings["resources"]}
    for pk in objects:
        if pk not in held:
            held.add(pk)
            settings["resources"].append({"_id": str(uuid.uuid4()), "name": pk, "ownerManagedAccess": False,
                                          "attributes": {}, "uris": [], "scopes": [{"name": s} for s in SCHEMA[kind]]})
    policies = {ref: p["name"] for p in settings["policies"] if p["type"] != "scope" for ref in (p["id"], p["name"])}
    applied = []
    for ref in _strings(body.get("policies") or []):
        if ref not in policies:
            raise RepresentationError("", f"Policy with id [{ref}] not found")
        applied.append(policies[ref])
    strategy = _strategy(body.get("decisionStrategy", "UNANIMOUS"), "decisionStrategy")
    if body.get("logic", "POSITIVE") != "POSITIVE":
        raise RepresentationError("logic", "a permission's decision comes from its policies: only POSITIVE")
    if not isinstance(body.get("name"), str) or not body["name"].strip():
        raise RepresentationError("name", "required")
    dump = lambda value: json.dumps(value, separators=(",", ":"))  # noqa: E731
    rep = {"id": existing["id"] if existing else str(uuid.uuid4()), "name": body["name"], "type": "scope",
           "logic": "POSITIVE", "decisionStrategy": strategy,
           "config": {"defaultResourceType": kind, "resources": dump(objects or [kind]), "scopes": dump(scopes),
                      "applyPolicies": dump(applied)}}
    if body.get("description"):
        rep["description"] = str(body["description"])
    return rep


def _strings(value):
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise RepresentationError("", "expected a list of ids")
    return value


def _object_id(realm, kind, ref):
    model, alternate = _LOOKUPS[kind]
    where = Q(pk=ref) | Q(**{alternate: ref}) if alternate else Q(pk=ref)
    found = model.objects.filter(where, realm=realm).values_list("pk", flat=True).first()
    if found is None:
        # Keycloak 26.2 mapped an id it could not resolve to the type (every object); 26.7 refuses it so.
        raise RepresentationError("", f"Resource [{ref}] does not exist for type [{kind}]")
    return found


def check_admin_permissions(realm, client, settings):
    """The admin-permissions client's settings after an Admin API change: what an import of them
    would accept (the schema's types and scopes, its policy types, the objects named exist)."""
    parse_authorization(settings, "", PERMISSIONS_CLIENT, None)
    resolve_authorization(realm, client, settings, "", {})
