"""``/admin/realms/{realm}/clients/{id}/authz/resource-server/policy/evaluate`` (Keycloak's
PolicyEvaluationService): the decision for a user on a resource server's resources, or on the
objects of a resource type of the admin-permissions client, with each permission that applied and
its policies' outcomes (the console's Evaluate tab)."""
from rest_framework.response import Response

from ..administration.admin_permissions import MODEL_OF, SCHEMA, explain, resource_type_refusal
from ..authz import tickets
from ..authz.evaluation import Decider, Identity
from ..authz.policies import config_list, evaluate
from ..models import Client, Role, User
from . import errors
from .authz_base import AuthzResource, _body


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
        if not isinstance(kind, str) or kind not in SCHEMA:
            raise errors.Invalid(resource_type_refusal(kind))
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
