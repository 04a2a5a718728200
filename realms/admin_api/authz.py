"""``/admin/realms/{realm}/clients/{id}/authz/resource-server/...`` (Keycloak's
ResourceServerService, ResourceSetService, ScopeService, PolicyService, PolicyEvaluationService):
a resource server's settings, resources, scopes, policies and permissions, and the policy
evaluation the console's Evaluate tab runs. Reading needs ``view-authorization``, writing
``manage-authorization`` (each implied by ``manage-authorization``, as Keycloak's roles).

Policies come in Keycloak's typed representations (``policy/{type}``, ``permission/resource``,
``permission/scope``: ``roles``, ``users``, ``groups``, ``clients``, ``clientScopes``,
``policies``, ``resources``, ``scopes``, ``resourceType``, time and regex fields, resources,
scopes and policies by id or name) and are kept as the export's (``config``, names); every
write is checked as an import is (``realms.representation.resource_server``): what cannot be
evaluated is refused with 400, never stored.
"""
import copy
import json

from django.urls import path
from rest_framework import status
from rest_framework.response import Response

from ..administration.admin_permissions import MODEL_OF, PERMISSIONS_CLIENT, SCHEMA, explain
from ..audit import admin_events
from ..authz import tickets
from ..authz.evaluation import Decider, Identity, Server
from ..authz.policies import config_list, evaluate
from ..models import Client, Role, User
from ..representation import RepresentationError
from ..representation.authorization import (
    NOT_SUPPORTED,
    TYPE_REFUSED,
    admin_permission,
    check_admin_permissions,
    schema_settings,
)
from ..representation.resource_server import (
    ENFORCEMENT_MODES,
    PERMISSION_TYPES,
    NameTaken,
    check_policy,
    check_references,
    check_scope,
    matching_resources,
    merge,
    new_id,
    remove_resource,
    resolve,
    resource_from_rep,
    resource_rep,
    store_resource,
    write,
)
from . import errors
from .views import RealmResource

BASE = "clients/<str:client_uuid>/authz/resource-server"
# Keycloak's typed policy fields and the config keys they are kept in.
_LISTS = {"roles": "roles", "users": "users", "groups": "groups", "clients": "clients", "clientScopes": "clientScopes"}
_TIME = {"notBefore": "nbf", "notOnOrAfter": "noa", **{k: k for k in (
    "dayMonth", "dayMonthEnd", "month", "monthEnd", "year", "yearEnd", "hour", "hourEnd", "minute", "minuteEnd")}}
_PLAIN = {"targetClaim": "targetClaim", "pattern": "pattern", "targetContextAttributes": "targetContextAttributes",
          "groupsClaim": "groupsClaim", "fetchRoles": "fetchRoles", "resourceType": "defaultResourceType"}
# Typed fields naming other objects of the resource server: field -> (config key, settings list, id key).
_NAMED = {"policies": ("applyPolicies", "policies", "id"), "resources": ("resources", "resources", "_id"),
          "scopes": ("scopes", "scopes", "id")}


class AuthzResource(RealmResource):
    required_role = {"GET": "view-authorization", "POST": "manage-authorization", "PUT": "manage-authorization",
                     "DELETE": "manage-authorization"}

    schema = False  # the admin-permissions client: its settings follow the admin-permissions schema

    def server(self):
        client = Client.objects.filter(realm=self.realm, pk=self.kwargs["client_uuid"]).first()
        if client is None:
            raise errors.NotFound("Could not find client")
        if not client.authorization_services_enabled:
            raise errors.NotFound("HTTP 404 Not Found")
        if client.client_id == PERMISSIONS_CLIENT:
            self.schema, self.server_client = True, client
            return Server(client, schema_settings(client, copy.deepcopy(client.authorization_settings)))
        return Server(client, client.authorization_settings)

    def typed(self, settings, kind, body, existing=None):
        """A policy in the export's shape from Keycloak's typed representation of ``kind``; on the
        admin-permissions client, a scope permission names a resource type and its objects."""
        if self.schema and kind == "resource":
            raise errors.Invalid(TYPE_REFUSED)
        if self.schema and kind == "scope":
            return admin_permission(self.realm, settings, body, existing)
        return typed_to_stored(settings, kind, body, existing)

    def refuse_on_schema(self):
        """Keycloak's throwExceptionIfAdminPermissionClient: the admin-permissions client's
        resources and scopes are the schema's (and the objects its permissions name)."""
        if self.schema:
            raise errors.Invalid(NOT_SUPPORTED)

    def change(self, server, change, kind, path, representation=None, operation="UPDATE"):
        if self.schema:
            change = self._schema_change(change)
        try:
            result = write(server.client, change)
        except NameTaken as exc:
            raise errors.Conflict(exc.message) from None
        except RepresentationError as exc:
            raise errors.Invalid(str(exc)) from None
        admin_events.record(self.realm, operation, kind, f"clients/{server.client.pk}/authz/resource-server{path}",
                            auth=self.auth_details(), representation=representation)
        return result

    def _schema_change(self, change):
        """A change of the admin-permissions client: on the schema's resources and scopes, the
        resources of objects no permission names any more removed (Keycloak's
        removeOrphanResources), checked as an import of them would be. The Admin API's decisions
        read the settings at each request, so it takes effect at once."""
        def schema_change(settings):
            schema_settings(self.server_client, settings)
            result = change(settings)
            named = {n for p in settings["policies"] if p["type"] == "scope" for n in config_list(p, "resources")}
            settings["resources"] = [r for r in settings["resources"] if r["name"] in SCHEMA or r["name"] in named]
            check_admin_permissions(self.realm, self.server_client, settings)
            return result
        return schema_change


def _body(request):
    if not isinstance(request.data, dict):
        raise errors.Invalid("Expected a JSON object")
    return request.data


def _page(request, items):
    first = int(request.query_params.get("first") or 0)
    size = int(request.query_params.get("max") or -1)
    return items[first:] if size < 0 else items[first:first + size]


# resource server --------------------------------------------------------------------------------

def _server_rep(server):
    s = server.settings
    return {"id": server.client.pk, "clientId": server.client.client_id, "name": server.client.client_id,
            "allowRemoteResourceManagement": s.get("allowRemoteResourceManagement", False),
            "policyEnforcementMode": s.get("policyEnforcementMode", "ENFORCING"),
            "decisionStrategy": s.get("decisionStrategy", "UNANIMOUS")}


class ResourceServer(AuthzResource):
    def get(self, request, realm, client_uuid):
        return Response(_server_rep(self.server()))

    def put(self, request, realm, client_uuid):
        body, server = _body(request), self.server()

        def change(settings):
            if body.get("policyEnforcementMode", settings["policyEnforcementMode"]) not in ENFORCEMENT_MODES:
                raise RepresentationError("policyEnforcementMode", "not one of " + ", ".join(ENFORCEMENT_MODES))
            if body.get("decisionStrategy", settings["decisionStrategy"]) not in ("UNANIMOUS", "AFFIRMATIVE",
                                                                                  "CONSENSUS"):
                raise RepresentationError("decisionStrategy", "not one of UNANIMOUS, AFFIRMATIVE, CONSENSUS")
            for key in ("policyEnforcementMode", "decisionStrategy"):
                settings[key] = body.get(key, settings[key])
            settings["allowRemoteResourceManagement"] = bool(body.get("allowRemoteResourceManagement",
                                                                      settings["allowRemoteResourceManagement"]))
        self.change(server, change, "AUTHORIZATION_RESOURCE_SERVER", "", body)
        return Response(status=status.HTTP_204_NO_CONTENT)


class Settings(AuthzResource):
    """The whole resource server as the export has it (the console's Export settings)."""

    def get(self, request, realm, client_uuid):
        server = self.server()
        return Response({**_server_rep(server), **server.settings})


class Import(AuthzResource):
    """``import``: a ResourceServerRepresentation merged into the resource server by name."""

    def post(self, request, realm, client_uuid):
        server, body = self.server(), _body(request)
        self.refuse_on_schema()
        self.change(server, lambda settings: merge(self.realm, settings, body), "AUTHORIZATION_RESOURCE_SERVER",
                    "/import", body)
        return Response(status=status.HTTP_204_NO_CONTENT)


# resources --------------------------------------------------------------------------------------

class Resources(AuthzResource):
    def get(self, request, realm, client_uuid):
        server = self.server()
        found = matching_resources(server.client, server.resources, request.query_params)
        return Response([resource_rep(server.client, r) for r in _page(request, found)])

    def post(self, request, realm, client_uuid):
        server = self.server()
        self.refuse_on_schema()
        try:
            resource = resource_from_rep(server.client, _body(request))
        except RepresentationError as exc:
            raise errors.Invalid(str(exc)) from None
        self.change(server, lambda s: store_resource(s, resource), "AUTHORIZATION_RESOURCE",
                    f"/resource/{resource['_id']}", resource, "CREATE")
        return Response(resource_rep(server.client, resource), status=status.HTTP_201_CREATED)


class ResourceDetail(AuthzResource):
    def existing(self, server):
        found = server.by_id.get(self.kwargs["resource_id"])
        if found is None:
            raise errors.NotFound("Resource not found")
        return found

    def get(self, request, realm, client_uuid, resource_id):
        server = self.server()
        return Response(resource_rep(server.client, self.existing(server)))

    def put(self, request, realm, client_uuid, resource_id):
        server = self.server()
        self.refuse_on_schema()
        try:
            resource = resource_from_rep(server.client, _body(request), self.existing(server))
        except RepresentationError as exc:
            raise errors.Invalid(str(exc)) from None
        self.change(server, lambda s: store_resource(s, resource), "AUTHORIZATION_RESOURCE",
                    f"/resource/{resource_id}", resource)
        return Response(status=status.HTTP_204_NO_CONTENT)

    def delete(self, request, realm, client_uuid, resource_id):
        server = self.server()
        self.refuse_on_schema()
        self.existing(server)
        self.change(server, lambda s: remove_resource(s, resource_id), "AUTHORIZATION_RESOURCE",
                    f"/resource/{resource_id}", operation="DELETE")
        tickets.forget(server.client, resource_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


# scopes -----------------------------------------------------------------------------------------

def _store_scope(settings, scope):
    if any(s["name"] == scope["name"] and s["id"] != scope["id"] for s in settings["scopes"]):
        raise NameTaken("name", f"Scope with name [{scope['name']}] already exists.")
    old = next((s for s in settings["scopes"] if s["id"] == scope["id"]), None)
    if old is None:
        settings["scopes"].append(scope)
        return
    settings["scopes"] = [scope if s["id"] == scope["id"] else s for s in settings["scopes"]]
    if old["name"] != scope["name"]:
        _rename(settings, old["name"], scope["name"])


def _rename(settings, old, new):
    """A scope's new name, wherever resources and permissions name it."""
    for resource in settings["resources"]:
        resource["scopes"] = [{"name": new} if s["name"] == old else s for s in resource["scopes"]]
    for policy in settings["policies"]:
        if "scopes" in policy["config"]:
            policy["config"]["scopes"] = json.dumps([new if n == old else n for n in config_list(policy, "scopes")],
                                                    separators=(",", ":"))


def _remove_scope(settings, scope_id):
    gone = next(s for s in settings["scopes"] if s["id"] == scope_id)
    settings["scopes"] = [s for s in settings["scopes"] if s["id"] != scope_id]
    for resource in settings["resources"]:
        resource["scopes"] = [s for s in resource["scopes"] if s["name"] != gone["name"]]
    for policy in settings["policies"]:
        if gone["name"] in config_list(policy, "scopes"):
            policy["config"]["scopes"] = json.dumps([n for n in config_list(policy, "scopes") if n != gone["name"]],
                                                    separators=(",", ":"))


class Scopes(AuthzResource):
    def get(self, request, realm, client_uuid):
        name = request.query_params.get("name", "").lower()
        return Response(_page(request, [s for s in self.server().settings["scopes"] if name in s["name"].lower()]))

    def post(self, request, realm, client_uuid):
        server = self.server()
        self.refuse_on_schema()
        try:
            scope = check_scope({**_body(request), "id": new_id()}, "")
        except RepresentationError as exc:
            raise errors.Invalid(str(exc)) from None
        self.change(server, lambda s: _store_scope(s, scope), "AUTHORIZATION_SCOPE", f"/scope/{scope['id']}", scope,
                    "CREATE")
        return Response(scope, status=status.HTTP_201_CREATED)


class ScopeDetail(AuthzResource):
    def existing(self, server):
        found = next((s for s in server.settings["scopes"] if s["id"] == self.kwargs["scope_id"]), None)
        if found is None:
            raise errors.NotFound("Scope not found")
        return found

    def get(self, request, realm, client_uuid, scope_id):
        return Response(self.existing(self.server()))

    def put(self, request, realm, client_uuid, scope_id):
        server = self.server()
        self.refuse_on_schema()
        self.existing(server)
        try:
            scope = check_scope({**_body(request), "id": scope_id}, "")
        except RepresentationError as exc:
            raise errors.Invalid(str(exc)) from None
        self.change(server, lambda s: _store_scope(s, scope), "AUTHORIZATION_SCOPE", f"/scope/{scope_id}", scope)
        return Response(status=status.HTTP_204_NO_CONTENT)

    def delete(self, request, realm, client_uuid, scope_id):
        server = self.server()
        self.refuse_on_schema()
        name = self.existing(server)["name"]
        self.change(server, lambda s: _remove_scope(s, scope_id), "AUTHORIZATION_SCOPE", f"/scope/{scope_id}",
                    operation="DELETE")
        tickets.forget(server.client, scope=name)
        return Response(status=status.HTTP_204_NO_CONTENT)


# policies and permissions -----------------------------------------------------------------------

def _names(settings, field, refs):
    """Ids or names of policies, resources or scopes, as the names the config keeps."""
    _, key, id_key = _NAMED[field]
    by_id = {item[id_key]: item["name"] for item in settings[key]}
    return [by_id.get(ref, ref) for ref in refs]


def typed_to_stored(settings, kind, body, existing=None):
    """A policy in the export's shape from Keycloak's typed representation of ``kind``."""
    config = {}
    for field, key in _LISTS.items():
        if field in body:
            config[key] = json.dumps(body[field], separators=(",", ":"))
    for field, key in {**_TIME, **_PLAIN}.items():
        if body.get(field) not in (None, ""):
            config[key] = str(body[field]).lower() if isinstance(body[field], bool) else str(body[field])
    for field, (key, _, _) in _NAMED.items():
        if field in body:
            config[key] = json.dumps(_names(settings, field, body[field] or []), separators=(",", ":"))
    rep = {"name": body.get("name"), "type": kind, "logic": body.get("logic", "POSITIVE"),
           "decisionStrategy": body.get("decisionStrategy", "UNANIMOUS"), "config": config,
           "id": existing["id"] if existing else new_id()}
    if body.get("description"):
        rep["description"] = body["description"]
    return check_policy(rep, "")


def stored_to_typed(settings, policy, schema=False):
    """Keycloak's typed representation of a stored policy (other objects by id; the objects an
    admin permission names by their own ids, none for all of its type)."""
    out = {k: policy[k] for k in ("id", "name", "type", "logic", "decisionStrategy", "description") if k in policy}
    config = policy["config"]
    for field, key in _LISTS.items():
        if key in config:
            out[field] = config_list(policy, key)
    for field, key in {**_TIME, **_PLAIN}.items():
        if key in config:
            out[field] = config[key]
    for field, (key, where, id_key) in _NAMED.items():
        if key in config:
            by_name = {item["name"]: item[id_key] for item in settings[where]}
            out[field] = [by_name.get(name, name) for name in config_list(policy, key)]
    if schema and policy["type"] == "scope":
        out["resources"] = [n for n in config_list(policy, "resources") if n != config["defaultResourceType"]]
    return out


def _store_policy(realm, settings, policy):
    if any(p["name"] == policy["name"] and p["id"] != policy["id"] for p in settings["policies"]):
        raise NameTaken("name", f"Policy with name [{policy['name']}] already exists")
    old = next((p for p in settings["policies"] if p["id"] == policy["id"]), None)
    if old is None:
        settings["policies"].append(policy)
    else:
        settings["policies"] = [policy if p["id"] == policy["id"] else p for p in settings["policies"]]
        if old["name"] != policy["name"]:
            for p in settings["policies"]:
                if old["name"] in config_list(p, "applyPolicies"):
                    p["config"]["applyPolicies"] = json.dumps(
                        [policy["name"] if n == old["name"] else n for n in config_list(p, "applyPolicies")],
                        separators=(",", ":"))
    check_references(settings, "")
    resolve(realm, settings, "")


def _remove_policy(settings, policy_id):
    gone = next(p for p in settings["policies"] if p["id"] == policy_id)
    settings["policies"] = [p for p in settings["policies"] if p["id"] != policy_id]
    for p in settings["policies"]:
        if gone["name"] in config_list(p, "applyPolicies"):
            p["config"]["applyPolicies"] = json.dumps([n for n in config_list(p, "applyPolicies") if n != gone["name"]],
                                                      separators=(",", ":"))


class Policies(AuthzResource):
    """``policy`` (every policy and permission) and ``permission`` (permissions only): the export's
    representation, filtered by ``name``, ``type`` and, as Keycloak's permission search, by
    ``resourceType``, ``resource`` (a resource's id or name; an admin permission's object id) and
    ``scope`` (id or name)."""

    permissions_only = False

    def get(self, request, realm, client_uuid):
        server, query = self.server(), request.query_params
        name, kind = query.get("name", "").lower(), query.get("type")
        scopes = {s["id"]: s["name"] for s in server.settings["scopes"]}
        resource = server.by_id.get(query.get("resource"), {}).get("name", query.get("resource"))
        scope = scopes.get(query.get("scope"), query.get("scope"))
        found = [p for p in server.settings["policies"]
                 if (p["type"] in PERMISSION_TYPES or not self.permissions_only)
                 and name in p["name"].lower() and (not kind or p["type"] == kind)
                 and (not query.get("resourceType") or p["config"].get("defaultResourceType") == query["resourceType"])
                 and (not resource or resource in config_list(p, "resources"))
                 and (not scope or scope in config_list(p, "scopes"))]
        return Response(_page(request, found))


class PolicySearch(AuthzResource):
    def get(self, request, realm, client_uuid):
        found = next((p for p in self.server().settings["policies"] if p["name"] == request.query_params.get("name")),
                     None)
        return Response(found) if found is not None else Response(status=status.HTTP_204_NO_CONTENT)


class PolicyById(AuthzResource):
    def existing(self, server):
        found = next((p for p in server.settings["policies"] if p["id"] == self.kwargs["policy_id"]), None)
        if found is None:
            raise errors.NotFound("Could not find policy")
        return found

    def get(self, request, realm, client_uuid, policy_id, kind=None):
        server = self.server()
        policy = self.existing(server)
        return Response(stored_to_typed(server.settings, policy, self.schema) if kind else policy)

    def put(self, request, realm, client_uuid, policy_id, kind=None):
        server = self.server()
        existing = self.existing(server)
        body = _body(request)

        def change(settings):
            policy = self.typed(settings, kind or existing["type"], body, existing)
            _store_policy(self.realm, settings, policy)
        self.change(server, change, "AUTHORIZATION_POLICY", f"/policy/{policy_id}", body)
        return Response(status=status.HTTP_204_NO_CONTENT)

    def delete(self, request, realm, client_uuid, policy_id, kind=None):
        server = self.server()
        self.existing(server)
        self.change(server, lambda s: _remove_policy(s, policy_id), "AUTHORIZATION_POLICY", f"/policy/{policy_id}",
                    operation="DELETE")
        return Response(status=status.HTTP_204_NO_CONTENT)


class PolicyOrType(PolicyById):
    """``policy/{x}`` and ``permission/{x}``: POST creates a policy of type ``x`` (Keycloak's
    ``policy/{type}``, ``permission/resource``, ``permission/scope``); GET, PUT and DELETE
    address the policy of id ``x``."""

    def get(self, request, realm, client_uuid, policy_id):
        return super().get(request, realm, client_uuid, policy_id)

    def post(self, request, realm, client_uuid, policy_id):
        kind = policy_id
        server = self.server()
        body = _body(request)
        created = {}

        def change(settings):
            created["policy"] = self.typed(settings, kind, body)
            _store_policy(self.realm, settings, created["policy"])
        self.change(server, change, "AUTHORIZATION_POLICY", f"/policy/{kind}", body, "CREATE")
        return Response(stored_to_typed(server.client.authorization_settings, created["policy"], self.schema),
                        status=status.HTTP_201_CREATED)


# evaluation -------------------------------------------------------------------------------------

class Evaluate(AuthzResource):
    """Keycloak's PolicyEvaluationService: the decision for ``userId`` (with ``roleIds`` added) on
    ``resources`` (by ``_id`` or name, their ``scopes``; none: every resource), each permission
    that applied and its policies."""

    required_role = {"POST": "view-authorization"}

    def post(self, request, realm, client_uuid):
        server, body = self.server(), _body(request)
        user = User.objects.filter(realm=self.realm, pk=body.get("userId")).first() or User.objects.filter(
            realm=self.realm, username=body.get("userId") or "").first()
        if user is None:
            raise errors.Invalid("User not found")
        client = Client.objects.filter(realm=self.realm, pk=body.get("clientId")).first()
        roles = frozenset(Role.objects.filter(realm=self.realm, pk__in=body.get("roleIds") or []))
        identity = Identity(user, client.client_id if client else server.client.client_id, extra_roles=roles)
        if self.schema:
            return Response(self._admin_permissions(server, identity, body))
        asked = body.get("resources") or [{"_id": r["_id"]} for r in server.resources]
        decider = Decider(server, self.realm, identity, tickets.shared_with(server.client, user))
        results = []
        for item in asked:
            resource = server.by_id.get(item.get("_id")) or next(
                (r for r in server.resources if r["name"] == item.get("name")), None)
            if resource is None:
                raise errors.Invalid(f"Resource {item.get('_id') or item.get('name')} not found")
            scopes = [s["name"] if isinstance(s, dict) else s for s in item.get("scopes") or []]
            granted = decider.decide(resource, scopes)
            applying = decider.applying(resource, set(scopes) or set(server.resource_scopes(resource)))
            results.append({
                "resource": {"_id": resource["_id"], "name": resource["name"]},
                "scopes": [{"name": s} for s in scopes or server.resource_scopes(resource)],
                "status": "PERMIT" if granted is not None else "DENY",
                "allowedScopes": [{"name": s} for s in sorted(granted or ())],
                "policies": [self._policy_result(server, decider, identity, p) for p in applying],
            })
        permit = any(r["status"] == "PERMIT" for r in results)
        return Response({"status": "PERMIT" if permit else "DENY", "results": results, "entitlements": False})

    def _admin_permissions(self, server, identity, body):
        """The admin-permissions client's evaluation: for each object of ``resourceType`` asked
        (``resources`` by id; none: the type as a whole), the scopes the permissions grant the
        user (their roles not counted, as Keycloak's evaluation of the permissions) and each
        permission that applied."""
        kind = body.get("resourceType")
        if kind not in SCHEMA:
            raise errors.Invalid("Resource type not provided.")
        model = MODEL_OF[kind]
        targets = [None]
        if body.get("resources"):
            refs = [r.get("_id") or r.get("name") if isinstance(r, dict) else r for r in body["resources"]]
            targets = list(model.objects.filter(realm=self.realm, pk__in=refs))
            if len(targets) != len(set(refs)):
                raise errors.Invalid(f"Resource {next(r for r in refs if r not in {t.pk for t in targets})} not found")
        decider = Decider(server, self.realm, identity)
        results = []
        for target in targets:
            decisions = explain(identity, self.realm, kind, target)
            applied = sorted({name for _, names in decisions.values() for name in names})
            asked = [s["name"] if isinstance(s, dict) else s for s in body.get("scopes") or []] or list(SCHEMA[kind])
            if set(asked) - set(SCHEMA[kind]):
                raise errors.Invalid(f"Scope {sorted(set(asked) - set(SCHEMA[kind]))[0]} was not found for resource "
                                     f"type {kind}.")
            allowed = [s for s in asked if decisions[s][0]]
            results.append({
                "resource": {"_id": target.pk if target else kind, "name": target.pk if target else kind},
                "scopes": [{"name": s} for s in asked], "status": "PERMIT" if allowed else "DENY",
                "allowedScopes": [{"name": s} for s in allowed],
                "policies": [self._policy_result(server, decider, identity, server.policies[n]) for n in applied]})
        permit = any(r["status"] == "PERMIT" for r in results)
        return {"status": "PERMIT" if permit else "DENY", "results": results, "entitlements": False}

    def _policy_result(self, server, decider, identity, permission):
        associated = []
        for name in config_list(permission, "applyPolicies"):
            policy = server.policies[name]
            outcome = evaluate(identity, self.realm, policy, server.policies)
            associated.append({"policy": {"id": policy["id"], "name": name, "type": policy["type"]},
                               "status": "PERMIT" if outcome else "DENY"})
        return {"policy": {"id": permission["id"], "name": permission["name"], "type": permission["type"],
                           "decisionStrategy": permission.get("decisionStrategy", "UNANIMOUS")},
                "status": "PERMIT" if decider.granted(permission) else "DENY",
                "scopes": config_list(permission, "scopes"), "associatedPolicies": associated}


# routes -----------------------------------------------------------------------------------------

def urlpatterns_for(prefix):
    base = f"{prefix}/{BASE}"
    return [
        path(base, ResourceServer.as_view()),
        path(f"{base}/settings", Settings.as_view()),
        path(f"{base}/import", Import.as_view()),
        path(f"{base}/resource", Resources.as_view()),
        path(f"{base}/resource/<str:resource_id>", ResourceDetail.as_view()),
        path(f"{base}/scope", Scopes.as_view()),
        path(f"{base}/scope/<str:scope_id>", ScopeDetail.as_view()),
        path(f"{base}/policy", Policies.as_view()),
        path(f"{base}/policy/search", PolicySearch.as_view()),
        path(f"{base}/policy/evaluate", Evaluate.as_view()),
        path(f"{base}/permission", Policies.as_view(permissions_only=True)),
        path(f"{base}/permission/<str:policy_id>", PolicyOrType.as_view()),
        path(f"{base}/permission/<str:kind>/<str:policy_id>", PolicyById.as_view()),
        path(f"{base}/policy/<str:policy_id>", PolicyOrType.as_view()),
        path(f"{base}/policy/<str:kind>/<str:policy_id>", PolicyById.as_view()),
    ]
