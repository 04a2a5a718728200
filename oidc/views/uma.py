"""UMA 2.0 endpoints as Keycloak 26 serves them: ``/.well-known/uma2-configuration`` and the
protection API under ``/authz/protection/``: ``resource_set`` (UMA resource registration: list,
create, read, update, delete a resource server's resources), ``permission`` (permission
tickets, redeemed at the token endpoint with the UMA grant) and ``permission/ticket`` (what the
owners of user-managed resources shared, and the requests awaiting them: list, create, grant,
delete).

The protection API authenticates with a PAT: an access token of the resource server (its
client-credentials token), whose user holds the client's ``uma_protection`` role. Resources are
written only where the resource server allows remote resource management
(``allowRemoteResourceManagement``), as in Keycloak.
"""
import json

from django.db.models import Q
from django.http import HttpResponse, JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

from realms.administration.admin_permissions import PERMISSIONS_CLIENT
from realms.authz import tickets
from realms.authz.evaluation import Server
from realms.data import realm_cache
from realms.http import cors
from realms.models import PermissionTicket, User
from realms.representation import RepresentationError
from realms.representation.resource_server import (
    UMA,
    UMA_PROTECTION,
    NameTaken,
    matching_resources,
    remove_resource,
    remove_uma_policy,
    resource_from_rep,
    resource_rep,
    store_resource,
    uma_policy_from_rep,
    uma_policy_rep,
    write,
)

from .. import services, uma
from ..errors import InvalidToken, OAuthError, error_response
from .common import realm_context
from .discovery import public_document

# What Keycloak's uma2-configuration copies from the OpenID Provider Metadata.
_FROM_DISCOVERY = ("issuer", "authorization_endpoint", "token_endpoint", "introspection_endpoint",
                   "end_session_endpoint", "frontchannel_logout_session_supported", "frontchannel_logout_supported",
                   "jwks_uri", "grant_types_supported", "response_types_supported", "response_modes_supported",
                   "registration_endpoint", "token_endpoint_auth_methods_supported",
                   "token_endpoint_auth_signing_alg_values_supported", "scopes_supported")
PROTECTION = "authz/protection"


@public_document
def uma2_configuration(realm, issuer):
    document = services.discovery_document(realm, issuer)
    out = {k: document[k] for k in _FROM_DISCOVERY if k in document}
    out["resource_registration_endpoint"] = f"{issuer}/{PROTECTION}/resource_set"
    out["permission_endpoint"] = f"{issuer}/{PROTECTION}/permission"
    out["policy_endpoint"] = f"{issuer}/{PROTECTION}/uma-policy"
    return JsonResponse(out)


class ProtectionError(OAuthError):
    """Keycloak's ErrorResponseException of the protection API: ``{"error", "error_description"}``."""

    def __init__(self, error, description, status):
        super().__init__(description, status=status)
        self.error = error


def _json(body, status=200):
    return JsonResponse(body, status=status, safe=False)


def protection(methods, pat=True):
    """A protection API view: ``view(request, server, issuer, **kwargs)`` with the PAT's resource
    server; ``pat=False``: a user's own access token to the resource server will do (Keycloak's
    uma-policy), and the view is ``view(request, server, issuer, user, **kwargs)``."""
    def decorate(view):
        @csrf_exempt
        def wrapper(request, realm, **kwargs):
            if request.method == "OPTIONS":
                return cors.preflight(request, HttpResponse(), methods)
            if request.method not in methods:
                return HttpResponse(status=405)
            realm_config, issuer = realm_context(request, realm)
            try:
                server, user = _resource_server(request, realm_config, issuer, pat)
                return view(request, server, issuer, **kwargs) if pat else view(request, server, issuer, user, **kwargs)
            except OAuthError as exc:
                return error_response(exc)
        wrapper.__name__ = view.__name__
        return wrapper
    return decorate


def _resource_server(request, realm_config, issuer, pat):
    header = request.META.get("HTTP_AUTHORIZATION", "")
    token = header[7:].strip() if header[:7].lower() == "bearer " else ""
    found = uma.access_token_subject(realm_config, issuer, token) if token else None
    if found is None:
        raise InvalidToken("Token verification failed")
    claims, user, _ = found
    config = realm_config.client(claims["azp"])
    client = config.client
    if not client.authorization_services_enabled or client.client_id == PERMISSIONS_CLIENT:
        raise ProtectionError("invalid_clientId", f"Client application with id [{client.pk}] is not registered as "
                                                  "a resource server.", 403)
    if pat and not any(r.client_id == client.pk and r.name == UMA_PROTECTION for r in realm_cache.effective_roles(user)):
        raise ProtectionError("invalid_scope", "Requires uma_protection scope.", 403)
    return Server(client, client.authorization_settings), user


def _body(request):
    try:
        return json.loads(request.body or b"null")
    except ValueError:
        raise ProtectionError("invalid_request", "Invalid JSON body", 400) from None


def _write(server, change):
    """Apply ``change(settings)`` to the resource server's settings; 403 where it does not allow
    remote resource management, 400 or 409 (a name taken) for what cannot be stored."""
    if not server.settings.get("allowRemoteResourceManagement"):
        raise ProtectionError("request_not_supported", "Remote Resource Management not enabled on resource server "
                                                       f"[{server.client.pk}].", 403)
    try:
        return write(server.client, change)
    except NameTaken as exc:
        raise ProtectionError("conflict", exc.message, 409) from None


def _resource(server, body, existing=None):
    try:
        return resource_from_rep(server.client, body, existing)
    except RepresentationError as exc:
        raise ProtectionError("invalid_request", str(exc), 400) from None


# resource_set ----------------------------------------------------------------------------------

def _page(request, items):
    try:
        first = max(int(request.GET.get("first", 0)), 0)
        size = int(request.GET.get("max", -1))
    except ValueError:
        raise ProtectionError("invalid_request", "first and max are numbers", 400) from None
    return items[first:] if size < 0 else items[first:first + size]


@protection(["GET", "POST", "OPTIONS"])
def resource_set(request, server, issuer):
    if request.method == "POST":
        resource = _resource(server, _body(request))
        _write(server, lambda settings: store_resource(settings, resource))
        return _json(resource_rep(server.client, resource), status=201)
    found = _page(request, matching_resources(server.client, server.resources, request.GET))
    if request.GET.get("deep") == "true":
        return _json([resource_rep(server.client, r) for r in found])
    return _json([r["_id"] for r in found])


@protection(["GET", "PUT", "DELETE", "OPTIONS"])
def resource_set_detail(request, server, issuer, resource_id):
    existing = server.by_id.get(resource_id)
    if existing is None:
        raise ProtectionError("not_found", f"Resource with id [{resource_id}] not found", 404)
    if request.method == "GET":
        return _json(resource_rep(server.client, existing))
    if request.method == "PUT":
        resource = _resource(server, _body(request), existing)
        _write(server, lambda settings: store_resource(settings, resource))
    else:
        _write(server, lambda settings: remove_resource(settings, resource_id))
        tickets.forget(server.client, resource_id)
    return HttpResponse(status=204)


# permission (tickets) --------------------------------------------------------------------------

@protection(["POST", "OPTIONS"])
def permission(request, server, issuer):
    body = _body(request)
    requested = body if isinstance(body, list) else [body]
    if not requested or not all(isinstance(p, dict) for p in requested):
        raise ProtectionError("invalid_request", "Invalid permission request", 400)
    permissions, claims = [], {}
    for entry in requested:
        resource_id = entry.get("resource_id")
        scopes = entry.get("resource_scopes") or []
        if resource_id is not None and resource_id not in server.by_id:
            raise ProtectionError("invalid_resource_id", f"Resource set with id [{resource_id}] does not exists in "
                                                         "this server.", 400)
        if not isinstance(scopes, list) or any(s not in server.scope_names for s in scopes):
            raise ProtectionError("invalid_scope", f"Scope [{scopes}] is invalid", 400)
        if resource_id is None and not scopes:
            raise ProtectionError("invalid_resource_id", "Resource id or name not provided.", 400)
        permissions.append({"resource_id": resource_id, "resource_scopes": scopes})
        for name, values in (entry.get("claims") or {}).items():
            claims.setdefault(str(name), []).extend(str(v) for v in (values if isinstance(values, list) else [values]))
    ticket = uma.issue_ticket(server.client.realm, issuer, server.client.client_id, permissions, claims)
    return _json({"ticket": ticket}, status=201)


# permission/ticket (what owners share) ---------------------------------------------------------

def ticket_rep(server, ticket, names=False):
    scope_ids = {s["name"]: s["id"] for s in server.settings["scopes"]}
    rep = {"id": ticket.pk, "owner": ticket.owner_id, "resource": ticket.resource_id,
           "requester": ticket.requester_id, "granted": ticket.granted_at is not None}
    if ticket.scope:
        rep["scope"] = scope_ids.get(ticket.scope, ticket.scope)
    if names:
        resource = server.by_id.get(ticket.resource_id, {})
        rep.update(ownerName=ticket.owner.username, requesterName=ticket.requester.username,
                   resourceName=resource.get("name"))
        if ticket.scope:
            rep["scopeName"] = ticket.scope
    return rep


def _scope_name(server, body):
    """A ticket's scope by id (``scope``) or name (``scopeName``); empty for the whole resource."""
    ref = body.get("scopeName") or body.get("scope") or ""
    by_id = {s["id"]: s["name"] for s in server.settings["scopes"]}
    name = by_id.get(ref, ref)
    if name and name not in server.scope_names:
        raise ProtectionError("invalid_scope", f"Scope [{ref}] is invalid", 400)
    return name


@protection(["GET", "POST", "PUT", "OPTIONS"])
def permission_ticket(request, server, issuer):
    if request.method == "GET":
        return _json(_page(request, [ticket_rep(server, t, request.GET.get("returnNames") == "true")
                                     for t in _tickets(server, request.GET)]))
    body = _body(request)
    if not isinstance(body, dict):
        raise ProtectionError("invalid_request", "Expected a PermissionTicketRepresentation", 400)
    if request.method == "PUT":
        ticket = PermissionTicket.objects.filter(client=server.client, pk=body.get("id")).first()
        if ticket is None:
            raise ProtectionError("invalid_ticket", "Ticket not found", 400)
        ticket.granted_at = timezone.now() if body.get("granted") else None
        ticket.save(update_fields=["granted_at"])
        return HttpResponse(status=204)
    resource = server.by_id.get(body.get("resource"))
    if resource is None:
        raise ProtectionError("invalid_resource_id", f"Resource set with id [{body.get('resource')}] does not exists "
                                                     "in this server.", 400)
    if "owner" not in resource:
        raise ProtectionError("invalid_permission", "Only resources owned by users can be shared", 400)
    ref = body.get("requester") or body.get("requesterName") or ""
    requester = User.objects.filter(realm=server.client.realm_id).filter(Q(pk=ref) | Q(username=ref)).first()
    if requester is None:
        raise ProtectionError("invalid_permission", "Requester does not exists in this server as user.", 400)
    scope = _scope_name(server, body)
    ticket, _ = PermissionTicket.objects.update_or_create(
        client=server.client, resource_id=resource["_id"], scope=scope, requester=requester,
        defaults={"realm_id": server.client.realm_id, "owner_id": resource["owner"]["id"],
                  "granted_at": timezone.now() if body.get("granted") else None})
    return _json(ticket_rep(server, ticket), status=201)


@protection(["DELETE", "OPTIONS"])
def permission_ticket_detail(request, server, issuer, ticket_id):
    deleted, _ = PermissionTicket.objects.filter(client=server.client, pk=ticket_id).delete()
    if not deleted:
        raise ProtectionError("not_found", "Ticket not found", 404)
    return HttpResponse(status=204)


# uma-policy (what owners grant by policy) --------------------------------------------------------

def _owned(server, user, resource_id):
    """Keycloak's checkRequest: a user-managed resource of the caller, remote management on."""
    resource = server.by_id.get(resource_id)
    if resource is None:
        raise ProtectionError("invalid_request", f"Resource [{resource_id}] cannot be found", 400)
    if resource.get("owner", {}).get("id") != user.pk:
        raise ProtectionError("invalid_request", f"Only resource owner can access policies for resource [{resource_id}]",
                              400)
    if not resource.get("ownerManagedAccess"):
        raise ProtectionError("invalid_request", "Only resources with owner managed accessed can have policies", 400)
    if not server.settings.get("allowRemoteResourceManagement"):
        raise ProtectionError("request_not_supported", "Remote Resource Management not enabled on resource server "
                                                       f"[{server.client.pk}]", 403)
    return resource


def _uma_write(server, user, resource, body, existing=None):
    def change(settings):
        return uma_policy_from_rep(server.client.realm, settings, resource, user.pk, body, existing)
    try:
        return _write(server, change)
    except RepresentationError as exc:
        raise ProtectionError("invalid_request", str(exc), 400) from None


@protection(["GET", "OPTIONS"], pat=False)
def uma_policies(request, server, issuer, user):
    """The caller's user-managed permissions, filtered by ``name``, ``resource`` (id), ``scope``."""
    query = request.GET
    found = [p for p in server.settings["policies"] if p["type"] == UMA and p.get("owner") == user.pk
             and (not query.get("name") or query["name"].lower() in p["name"].lower())
             and (not query.get("resource") or query["resource"] in p["config"]["resources"])
             and (not query.get("scope") or query["scope"] in uma_policy_rep(server.settings, p)["scopes"])]
    return _json([uma_policy_rep(server.settings, p) for p in _page(request, found)])


@protection(["POST", "GET", "PUT", "DELETE", "OPTIONS"], pat=False)
def uma_policy(request, server, issuer, user, object_id):
    """POST ``{resource id}`` creates a permission on the caller's resource; GET, PUT and DELETE
    ``{policy id}`` read, replace and remove one of theirs."""
    if request.method == "POST":
        body = _body(request)
        if isinstance(body, dict) and body.get("id") is not None:
            raise ProtectionError("invalid_request", "Newly created uma policies should not have an id", 400)
        policy = _uma_write(server, user, _owned(server, user, object_id), body)
        return _json(uma_policy_rep(server.client.authorization_settings, policy))
    existing = next((p for p in server.settings["policies"] if p["id"] == object_id and p["type"] == UMA), None)
    if existing is None:
        raise ProtectionError("invalid_request", f"Policy with [{object_id}] does not exist", 404)
    resource = _owned(server, user, json.loads(existing["config"]["resources"])[0])
    if request.method == "GET":
        return _json(uma_policy_rep(server.settings, existing))
    if request.method == "PUT":
        _uma_write(server, user, resource, _body(request), existing)
        return HttpResponse(status=201)  # as Keycloak's PolicyResourceService.update
    _write(server, lambda settings: remove_uma_policy(settings, object_id))
    return HttpResponse(status=204)


def _tickets(server, query):
    found = PermissionTicket.objects.filter(client=server.client).select_related("owner", "requester")
    for key, column in (("resourceId", "resource_id"), ("owner", "owner_id"), ("requester", "requester_id")):
        if query.get(key):
            found = found.filter(**{column: query[key]})
    if query.get("scopeId"):
        found = found.filter(scope=_scope_name(server, {"scope": query["scopeId"]}))
    if query.get("granted") in ("true", "false"):
        found = found.filter(granted_at__isnull=query["granted"] == "false")
    return list(found.order_by("created_at", "id"))
