"""``/admin/realms/{realm}/clients/{id}/authz/resource-server/...`` (Keycloak's
ResourceServerService, ResourceSetService, ScopeService, PolicyService, PolicyResourceService):
a resource server's settings (and their import), resources, scopes, policies and permissions,
what each policy is tied to; the policy evaluation is ``authz_evaluation``'s. Reading needs
``view-authorization``, writing ``manage-authorization`` (each implied by
``manage-authorization``, as Keycloak's roles). On the admin-permissions client, the
admin-permissions schema's rules (``authz_base``, docs/decisions/0093).

Policies come in Keycloak's typed representations (``policy/{type}``, ``permission/resource``,
``permission/scope``: ``roles``, ``users``, ``groups``, ``clients``, ``clientScopes``,
``policies``, ``resources``, ``scopes``, ``resourceType``, time and regex fields, resources,
scopes and policies by id or name) and are kept as the export's (``config``, names); every
write is checked as an import is (``realms.representation.resource_server``): what cannot be
evaluated is refused with 400, never stored.
"""
import json

from django.urls import path
from rest_framework import status
from rest_framework.response import Response

from ..authz import tickets
from ..authz.policies import config_list
from ..representation import RepresentationError
from ..representation.authorization import (
    TYPE_REFUSED,
    admin_permission,
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
)
from . import errors
from .authz_base import BASE, AuthzResource, _body, _page
from .authz_evaluation import Evaluate

# Keycloak's typed policy fields and the config keys they are kept in.
_LISTS = {"roles": "roles", "users": "users", "groups": "groups", "clients": "clients", "clientScopes": "clientScopes"}
_TIME = {"notBefore": "nbf", "notOnOrAfter": "noa", **{k: k for k in (
    "dayMonth", "dayMonthEnd", "month", "monthEnd", "year", "yearEnd", "hour", "hourEnd", "minute", "minuteEnd")}}
_PLAIN = {"targetClaim": "targetClaim", "pattern": "pattern", "targetContextAttributes": "targetContextAttributes",
          "groupsClaim": "groupsClaim", "fetchRoles": "fetchRoles", "resourceType": "defaultResourceType"}
# Typed fields naming other objects of the resource server: field -> (config key, settings list, id key).
_NAMED = {"policies": ("applyPolicies", "policies", "id"), "resources": ("resources", "resources", "_id"),
          "scopes": ("scopes", "scopes", "id")}


# resource server --------------------------------------------------------------------------------

def server_rep(server):
    s = server.settings
    return {"id": server.client.pk, "clientId": server.client.client_id, "name": server.client.client_id,
            "allowRemoteResourceManagement": s.get("allowRemoteResourceManagement", False),
            "policyEnforcementMode": s.get("policyEnforcementMode", "ENFORCING"),
            "decisionStrategy": s.get("decisionStrategy", "UNANIMOUS")}


class ResourceServer(AuthzResource):
    def get(self, request, realm, client_uuid):
        return Response(server_rep(self.server()))

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
        return Response({**server_rep(server), **server.settings})


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

def store_scope(settings, scope):
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


def remove_scope(settings, scope_id):
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
        self.change(server, lambda s: store_scope(s, scope), "AUTHORIZATION_SCOPE", f"/scope/{scope['id']}", scope,
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
        self.change(server, lambda s: store_scope(s, scope), "AUTHORIZATION_SCOPE", f"/scope/{scope_id}", scope)
        return Response(status=status.HTTP_204_NO_CONTENT)

    def delete(self, request, realm, client_uuid, scope_id):
        server = self.server()
        self.refuse_on_schema()
        name = self.existing(server)["name"]
        self.change(server, lambda s: remove_scope(s, scope_id), "AUTHORIZATION_SCOPE", f"/scope/{scope_id}",
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


def store_policy(realm, settings, policy):
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


def remove_policy(settings, policy_id):
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
    def typed(self, settings, kind, body, existing=None):
        """A policy in the export's shape from Keycloak's typed representation of ``kind``; on the
        admin-permissions client, a scope permission names a resource type and its objects."""
        if self.schema and kind == "resource":
            raise errors.Invalid(TYPE_REFUSED)
        if self.schema and kind == "scope":
            return admin_permission(self.realm, settings, body, existing)
        return typed_to_stored(settings, kind, body, existing)

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
            store_policy(self.realm, settings, policy)
        self.change(server, change, "AUTHORIZATION_POLICY", f"/policy/{policy_id}", body)
        return Response(status=status.HTTP_204_NO_CONTENT)

    def delete(self, request, realm, client_uuid, policy_id, kind=None):
        server = self.server()
        self.existing(server)
        self.change(server, lambda s: remove_policy(s, policy_id), "AUTHORIZATION_POLICY", f"/policy/{policy_id}",
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
            store_policy(self.realm, settings, created["policy"])
        self.change(server, change, "AUTHORIZATION_POLICY", f"/policy/{kind}", body, "CREATE")
        return Response(stored_to_typed(server.client.authorization_settings, created["policy"], self.schema),
                        status=status.HTTP_201_CREATED)


# what a policy is tied to (Keycloak's PolicyResourceService) ---------------------------------------

class PolicyAssociation(PolicyById):
    """``policy/{id}/associatedPolicies`` (the policies it applies), ``dependentPolicies`` (the
    permissions and aggregates applying it), ``resources`` and ``scopes`` (a permission's)."""

    part = None

    def get(self, request, realm, client_uuid, policy_id):
        server = self.server()
        policy = self.existing(server)
        brief = lambda p: {k: p[k] for k in ("id", "name", "type", "description", "logic", "decisionStrategy")  # noqa: E731
                           if k in p}
        if self.part == "associatedPolicies":
            return Response([brief(server.policies[n]) for n in config_list(policy, "applyPolicies")])
        if self.part == "dependentPolicies":
            return Response([brief(p) for p in server.settings["policies"]
                             if policy["name"] in config_list(p, "applyPolicies")])
        if self.part == "scopes":
            names = config_list(policy, "scopes")
            return Response([s for s in server.settings["scopes"] if s["name"] in names])
        named = config_list(policy, "resources")
        key = "_id" if policy["type"] == "uma" else "name"
        return Response([{"_id": r["_id"], "name": r["name"]} for r in server.resources if r[key] in named])


# routes -----------------------------------------------------------------------------------------

def urlpatterns_for(prefix):
    base = f"{prefix}/{BASE}"
    associations = [path(f"{base}/{kind}/<str:policy_id>/{part}", PolicyAssociation.as_view(part=part))
                    for kind in ("policy", "permission")
                    for part in ("associatedPolicies", "dependentPolicies", "resources", "scopes")]
    return [
        *associations,
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
