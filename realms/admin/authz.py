"""A client's Authorization tab (Keycloak 26's sub-tabs Settings, Resources, Authorization scopes,
Policies, Permissions, Evaluate, Export) for a client whose authorization services are on.

Each change is the Admin API's own (``realms.admin_api.authz``: the typed policies, the scope and
policy edits; ``realms.representation.resource_server``: resources, the row-locked write), so the
console and the API cannot disagree, and is recorded as the same admin event. Evaluate decides
with ``realms.authz.evaluation``, as the API's ``policy/evaluate``. Reading needs the client's
view permission and ``view-authorization``, changing its manage permission and
``manage-authorization``, as at the API."""
import json
from functools import partial

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse

from ..admin_api.authz import (
    remove_policy,
    remove_scope,
    server_rep,
    store_policy,
    store_scope,
    typed_to_stored,
)
from ..administration.admin_permissions import PERMISSIONS_CLIENT, can, console_admin
from ..audit import admin_events
from ..audit.admin_events import console_auth
from ..authz import tickets
from ..authz.evaluation import Decider, Identity, Server
from ..authz.policies import STRATEGIES, config_list, evaluate, find_group
from ..models import Client, Role, User
from ..representation import RepresentationError
from ..representation.resource_server import (
    ENFORCEMENT_MODES,
    PERMISSION_TYPES,
    check_scope,
    new_id,
    remove_resource,
    resource_from_rep,
    store_resource,
    write,
)
from .base import LinesField

TABS = (("settings", "Settings"), ("resources", "Resources"), ("scopes", "Authorization scopes"),
        ("policies", "Policies"), ("permissions", "Permissions"), ("evaluate", "Evaluate"), ("export", "Export"))
# The policy types offered (JavaScript is offered to be refused with Keycloak's message, as its
# console offers it and its server refuses it while script upload is off).
POLICY_TYPES = (("role", "Role"), ("user", "User"), ("group", "Group"), ("client", "Client"),
                ("client-scope", "Client scope"), ("time", "Time"), ("regex", "Regex"),
                ("aggregate", "Aggregated"), ("js", "JavaScript"))
_CHOICES = lambda values: [(v, v.capitalize()) for v in values]  # noqa: E731


class SettingsForm(forms.Form):
    policyEnforcementMode = forms.ChoiceField(label="Policy enforcement mode", choices=_CHOICES(ENFORCEMENT_MODES))
    decisionStrategy = forms.ChoiceField(label="Decision strategy", choices=_CHOICES(STRATEGIES))
    allowRemoteResourceManagement = forms.BooleanField(label="Remote resource management", required=False)


class ResourceForm(forms.Form):
    name = forms.CharField(label="Name")
    displayName = forms.CharField(label="Display name", required=False)
    type = forms.CharField(label="Type", required=False)
    uris = LinesField(label="Resource URIs", required=False)
    scopes = LinesField(label="Authorization scopes (one per line)", required=False)
    ownerManagedAccess = forms.BooleanField(label="User-managed access enabled", required=False)


class ScopeForm(forms.Form):
    name = forms.CharField(label="Name")
    displayName = forms.CharField(label="Display name", required=False)


class PolicyForm(forms.Form):
    type = forms.ChoiceField(label="Policy type", choices=POLICY_TYPES)
    name = forms.CharField(label="Name")
    description = forms.CharField(label="Description", required=False)
    values = LinesField(label="Applies to, one per line (role names or clientId/role, usernames, group paths, "
                              "client ids, client scope names, policy names)", required=False)
    logic = forms.ChoiceField(label="Logic", choices=_CHOICES(("POSITIVE", "NEGATIVE")))
    decisionStrategy = forms.ChoiceField(label="Decision strategy (aggregated)", choices=_CHOICES(STRATEGIES))
    notBefore = forms.CharField(label="Start time (yyyy-MM-dd HH:mm:ss)", required=False)
    notOnOrAfter = forms.CharField(label="Expire time (yyyy-MM-dd HH:mm:ss)", required=False)
    hour = forms.IntegerField(label="Hour", required=False, min_value=0, max_value=23)
    hourEnd = forms.IntegerField(label="Hour (end)", required=False, min_value=0, max_value=23)
    targetClaim = forms.CharField(label="Target claim (regex)", required=False)
    pattern = forms.CharField(label="Regex pattern", required=False)


class PermissionForm(forms.Form):
    type = forms.ChoiceField(label="Permission type", choices=(("resource", "Resource-based"),
                                                                ("scope", "Scope-based")))
    name = forms.CharField(label="Name")
    description = forms.CharField(label="Description", required=False)
    resourceType = forms.CharField(label="Resource type (resource-based, instead of resources)", required=False)
    resources = forms.MultipleChoiceField(label="Resources", required=False)
    scopes = forms.MultipleChoiceField(label="Authorization scopes (scope-based)", required=False)
    policies = forms.MultipleChoiceField(label="Policies", required=False)
    decisionStrategy = forms.ChoiceField(label="Decision strategy", choices=_CHOICES(STRATEGIES))

    def __init__(self, *args, server, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["resources"].choices = sorted({(r["name"], r["name"]) for r in server.resources
                                                   if "owner" not in r})
        self.fields["scopes"].choices = [(s["name"], s["name"]) for s in server.settings["scopes"]]
        self.fields["policies"].choices = [(p["name"], p["name"]) for p in server.settings["policies"]
                                           if p["type"] not in PERMISSION_TYPES]


class EvaluateForm(forms.Form):
    user = forms.CharField(label="User (username)")
    roles = forms.ModelMultipleChoiceField(label="Roles (counted as held)", required=False, queryset=Role.objects.none())
    resources = forms.MultipleChoiceField(label="Resources (none: every resource)", required=False)

    def __init__(self, *args, server, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["roles"].queryset = Role.objects.filter(realm_id=server.client.realm_id).order_by("client", "name")
        self.fields["resources"].choices = [(r["_id"], r["name"]) for r in server.resources]


def _policy_body(data, existing=None):
    """Keycloak's typed policy representation from the policy form; an entry of the policy edited
    keeps its ``required`` flag (the form does not offer it)."""
    kind, values = data["type"], data["values"]
    body = {k: data[k] for k in ("name", "description", "logic") if data[k]}

    def required(key):
        held = {e["id"]: e.get("required", False) for e in config_list(existing, key)} if existing else {}
        return [{"id": v, "required": held.get(v, False)} for v in values]
    typed = {"role": lambda: {"roles": required("roles")},
             "user": lambda: {"users": values}, "group": lambda: {"groups": [{"path": v} for v in values]},
             "client": lambda: {"clients": values},
             "client-scope": lambda: {"clientScopes": required("clientScopes")},
             "aggregate": lambda: {"policies": values, "decisionStrategy": data["decisionStrategy"]},
             "time": lambda: {k: data[k] for k in ("notBefore", "notOnOrAfter", "hour", "hourEnd")
                              if data[k] not in (None, "")},
             "regex": lambda: {"targetClaim": data["targetClaim"], "pattern": data["pattern"]}}
    return {**body, **typed.get(kind, dict)()}


def _group_path(realm, entry):
    group, names = find_group(realm, entry), []
    while group is not None:
        names.insert(0, group.name)
        group = group.parent
    return "/" + "/".join(names)


def initial(realm, kind, item):
    """The form's values of an existing resource, scope, policy or permission (``?edit=``)."""
    if kind == "resources":
        return {**item, "scopes": [s["name"] for s in item["scopes"]]}
    if kind == "scopes":
        return item
    config = item["config"]
    out = {k: item.get(k, "") for k in ("type", "name", "description", "logic", "decisionStrategy")}
    if kind == "permissions":
        return {**out, "resourceType": config.get("defaultResourceType", ""), "resources": config_list(item, "resources"),
                "scopes": config_list(item, "scopes"), "policies": config_list(item, "applyPolicies")}
    values = {"role": lambda: [e["id"] for e in config_list(item, "roles")],
              "group": lambda: [_group_path(realm, e) for e in config_list(item, "groups")],
              "client-scope": lambda: [e["id"] for e in config_list(item, "clientScopes")],
              "user": lambda: config_list(item, "users"), "client": lambda: config_list(item, "clients"),
              "aggregate": lambda: config_list(item, "applyPolicies")}.get(item["type"], list)()
    time = {"notBefore": config.get("nbf", ""), "notOnOrAfter": config.get("noa", ""),
            "hour": config.get("hour"), "hourEnd": config.get("hourEnd")}
    return {**out, "values": values, **time, "targetClaim": config.get("targetClaim", ""),
            "pattern": config.get("pattern", "")}


class Page:
    """One request to the tab: the client, its resource server and what the admin may do."""

    def __init__(self, model_admin, request, object_id):
        self.model_admin, self.request = model_admin, request
        self.client = get_object_or_404(Client, pk=object_id)
        if not self.client.authorization_services_enabled or self.client.client_id == PERMISSIONS_CLIENT:
            raise Http404("Authorization is not enabled for this client.")
        admin, realm = console_admin(request), self.client.realm
        if not (model_admin.has_view_permission(request, self.client)
                and (can(admin, realm, "view-authorization") or can(admin, realm, "manage-authorization"))):
            raise PermissionDenied
        self.may_manage = model_admin.has_change_permission(request, self.client) and can(
            admin, realm, "manage-authorization")
        self.server = Server(self.client, self.client.authorization_settings)

    def change(self, change, kind, sub_path, operation="UPDATE", representation=None):
        """The Admin API's write and admin event; a refusal raises RepresentationError."""
        if not self.may_manage:
            raise PermissionDenied
        write(self.client, change)
        admin_events.record(self.client.realm, operation, kind,
                            f"clients/{self.client.pk}/authz/resource-server{sub_path}",
                            auth=console_auth(self.request), representation=representation)
        self.server = Server(self.client, self.client.authorization_settings)


def _apply(page, data, post):
    """The change a POST asks for (``action``); answers the success message."""
    action = post.get("action")
    if action == "settings":
        def change(settings):
            settings.update({k: data[k] for k in ("policyEnforcementMode", "decisionStrategy",
                                                  "allowRemoteResourceManagement")})
        page.change(change, "AUTHORIZATION_RESOURCE_SERVER", "", representation=data)
        return "The authorization settings were saved."
    if action.startswith("delete-"):
        return _delete(page, action, post.get("id", ""))
    # An id posted with the form: the object it names is changed in place (renames follow).
    existing = _existing(page, action, post.get("id", ""))
    operation, done = ("UPDATE", "saved") if existing else ("CREATE", "created")
    if action == "add-resource":
        resource = resource_from_rep(page.client, {**{k: v for k, v in data.items() if v not in ("", [])},
                                                   "ownerManagedAccess": data["ownerManagedAccess"]}, existing)
        page.change(lambda s: store_resource(s, resource), "AUTHORIZATION_RESOURCE", f"/resource/{resource['_id']}",
                    operation, resource)
        return f"Resource {resource['name']} {done}."
    if action == "add-scope":
        scope = check_scope({**{k: v for k, v in data.items() if v}, "id": existing["id"] if existing else new_id()}, "")
        page.change(lambda s: store_scope(s, scope), "AUTHORIZATION_SCOPE", f"/scope/{scope['id']}", operation, scope)
        return f"Authorization scope {scope['name']} {done}."
    if action in ("add-policy", "add-permission"):
        kind = existing["type"] if existing else data["type"]  # a policy keeps its type, as Keycloak's
        body = _policy_body({**data, "type": kind}, existing) if action == "add-policy" else {
            k: data[k] for k in ("name", "description", "decisionStrategy", "resources", "scopes", "policies")
            if data[k] or k in ("resources", "policies")}
        if action == "add-permission" and data["resourceType"]:
            body["resourceType"] = data["resourceType"]
        created = {}

        def change(settings):
            created["policy"] = typed_to_stored(settings, kind, body, existing)
            store_policy(page.client.realm, settings, created["policy"])
        page.change(change, "AUTHORIZATION_POLICY", f"/policy/{existing['id'] if existing else kind}", operation, body)
        return f"{'Policy' if action == 'add-policy' else 'Permission'} {created['policy']['name']} {done}."
    raise Http404("Nothing to do.")


def _existing(page, action, item_id):
    """The object an edit names (None: a new one), or 404."""
    if not item_id:
        return None
    settings = page.server.settings
    found = {"add-resource": page.server.by_id.get(item_id),
             "add-scope": next((s for s in settings["scopes"] if s["id"] == item_id), None),
             "add-policy": next((p for p in settings["policies"] if p["id"] == item_id
                                 and p["type"] not in PERMISSION_TYPES), None),
             "add-permission": next((p for p in settings["policies"] if p["id"] == item_id
                                     and p["type"] in PERMISSION_TYPES), None)}.get(action)
    if found is None:
        raise Http404("Nothing to edit.")
    return found


def _delete(page, action, item_id):
    settings = page.server.settings
    if action == "delete-resource" and item_id in page.server.by_id:
        page.change(lambda s: remove_resource(s, item_id), "AUTHORIZATION_RESOURCE", f"/resource/{item_id}", "DELETE")
        tickets.forget(page.client, item_id)
        return "The resource was deleted."
    scope = next((s for s in settings["scopes"] if s["id"] == item_id), None)
    if action == "delete-scope" and scope is not None:
        page.change(lambda s: remove_scope(s, item_id), "AUTHORIZATION_SCOPE", f"/scope/{item_id}", "DELETE")
        tickets.forget(page.client, scope=scope["name"])
        return "The authorization scope was deleted."
    if action == "delete-policy" and any(p["id"] == item_id for p in settings["policies"]):
        page.change(lambda s: remove_policy(s, item_id), "AUTHORIZATION_POLICY", f"/policy/{item_id}", "DELETE")
        return "The policy was deleted."
    raise Http404("Nothing to do.")


_EDITS = {"resources": "add-resource", "scopes": "add-scope", "policies": "add-policy",
          "permissions": "add-permission"}  # the sub-tab's form, which also edits (``?edit=<id>``)
_FORMS = {"settings": SettingsForm, "add-resource": ResourceForm, "add-scope": ScopeForm, "add-policy": PolicyForm,
          "add-permission": PermissionForm, "evaluate": EvaluateForm}


def evaluation(page, data):
    """What the Admin API's ``policy/evaluate`` answers, per resource: the decision, the scopes
    granted, each permission that applied and its policies' outcomes."""
    server, realm = page.server, page.client.realm
    user = User.objects.filter(realm=realm, username=data["user"].strip().lower()).first()
    if user is None:
        return None
    identity = Identity(user, server.client.client_id, extra_roles=frozenset(data["roles"]))
    decider = Decider(server, realm, identity, tickets.shared_with(server.client, user))
    results = []
    for resource in [server.by_id[i] for i in data["resources"]] or server.resources:
        asked = server.resource_scopes(resource)
        granted = decider.decide(resource, [])
        permissions = []
        for p in decider.applying(resource, set(asked)):
            policies = [(name, evaluate(identity, realm, server.policies[name], server.policies))
                        for name in config_list(p, "applyPolicies")]
            permissions.append({"name": p["name"], "granted": decider.granted(p), "policies": policies})
        results.append({"resource": resource, "granted": granted is not None, "scopes": sorted(granted or ()),
                        "permissions": permissions})
    return results


def view(model_admin, request, object_id, tab):
    if tab not in dict(TABS):
        raise Http404("No such tab.")
    page = Page(model_admin, request, object_id)
    here = reverse("admin:realms_client_authorization", args=[page.client.pk, tab])
    export = {**server_rep(page.server), **page.server.settings}
    if tab == "export" and request.GET.get("download"):
        response = HttpResponse(json.dumps(export, indent=2), content_type="application/json")
        response["Content-Disposition"] = f'attachment; filename="{page.client.client_id}-authz-config.json"'
        return response
    bound, error, results, status = None, None, None, 200
    if request.method == "POST":
        action = request.POST.get("action", "")
        form_class = _FORMS.get(action)
        extra = {"server": page.server} if form_class in (PermissionForm, EvaluateForm) else {}
        bound = form_class(request.POST, **extra) if form_class else None
        if bound is not None and not bound.is_valid():
            status = 400
        elif action == "evaluate":
            results = evaluation(page, bound.cleaned_data)
            if results is None:
                bound.add_error("user", "User not found")
                status = 400
        else:
            try:
                done = _apply(page, bound.cleaned_data if bound else {}, request.POST)
            except RepresentationError as exc:
                # Keycloak's own words (a taken name, "Script upload is disabled"), else with the path.
                error, status = exc.message if exc.path in ("", "type", "name") else str(exc), 400
            else:
                model_admin.message_user(request, done, messages.SUCCESS)
                return HttpResponseRedirect(here)

    editing = _existing(page, _EDITS[tab], request.GET["edit"]) if tab in _EDITS and request.GET.get("edit") else None
    editing_id = request.POST.get("id", "") if bound is not None else (editing or {}).get("id") or (
        editing or {}).get("_id", "")

    def form(action, form_class, **extra):
        if bound is not None and request.POST.get("action") == action:
            return bound
        if editing is not None and action == _EDITS.get(tab):
            extra["initial"] = initial(page.client.realm, tab, editing)
        return form_class(**extra)
    settings = page.server.settings
    context = {
        **model_admin.admin_site.each_context(request), "opts": model_admin.opts, "original": page.client,
        "title": "Authorization", "client": page.client, "tabs": TABS, "tab": tab, "may_manage": page.may_manage,
        "back": reverse("admin:realms_client_change", args=[page.client.pk]), "error": error,
        "settings_form": form("settings", SettingsForm, initial={k: export[k] for k in SettingsForm.base_fields}),
        "resource_form": form("add-resource", ResourceForm), "scope_form": form("add-scope", ScopeForm),
        "policy_form": form("add-policy", PolicyForm),
        "permission_form": form("add-permission", PermissionForm, server=page.server),
        "evaluate_form": form("evaluate", EvaluateForm, server=page.server), "results": results,
        "resources": [{**r, "id": r["_id"], "scope_names": page.server.resource_scopes(r)}
                      for r in page.server.resources],
        "scopes": settings["scopes"],
        "policies": [p for p in settings["policies"] if p["type"] not in PERMISSION_TYPES],
        "permissions": [{**p, "names": config_list(p, "resources") or [p["config"].get("defaultResourceType", "")],
                         "scope_names": config_list(p, "scopes"), "applied": config_list(p, "applyPolicies")}
                        for p in settings["policies"] if p["type"] in PERMISSION_TYPES],
        "export": json.dumps(export, indent=2), "editing_id": editing_id,
    }
    return TemplateResponse(request, "admin/console/authz/page.html", context, status=status)


def urls(model_admin):
    return [path("<path:object_id>/authorization/<slug:tab>/",
                 model_admin.admin_site.admin_view(partial(view, model_admin)),
                 name="realms_client_authorization")]


def tab_links(client):
    """The client page's Authorization tab: links to the sub-tabs (authorization on) or None."""
    if not client.authorization_services_enabled or client.client_id == PERMISSIONS_CLIENT:
        return None
    return [(reverse("admin:realms_client_authorization", args=[client.pk, slug]), label) for slug, label in TABS]
