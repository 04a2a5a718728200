"""The realm's "Permissions" page (Keycloak 26's fine-grained admin permissions v2), listed in the
navigation while the realm's ``adminPermissionsEnabled`` is on: the ``admin-permissions``
client's scope permissions (a resource type of the schema, its scopes, every object of the type or
named ones, the policies applied) and its user, group, role and client policies.

Changes go through what the Admin API's ``clients/{admin-permissions}/authz`` routes use
(``realms.representation.authorization``'s schema and its ``admin_permission``, the Admin API's
typed policies, checked as an import would be), written under the client's row lock with the same
admin events; ``realms.administration.admin_permissions`` decides by them at the next request.
As Keycloak's ``AdminPermissionsSchema.init``, the client is made when the realm first needs it."""
import copy
from functools import partial

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from ..admin_api.authz import remove_policy, store_policy, typed_to_stored
from ..administration.admin_permissions import PERMISSIONS_CLIENT, POLICY_TYPES, SCHEMA, can, console_admin
from ..audit import admin_events
from ..audit.admin_events import console_auth
from ..authz.policies import STRATEGIES, config_list
from ..models import Client
from ..representation import RepresentationError
from ..representation.authorization import (
    admin_permission,
    check_admin_permissions,
    permissions_client,
    schema_settings,
)
from ..representation.resource_server import write
from .base import LinesField
from .switcher import current_realm

_POLICY_LABELS = {"user": "User", "group": "Group", "role": "Role", "client": "Client"}


class PermissionForm(forms.Form):
    name = forms.CharField(label="Name")
    description = forms.CharField(label="Description", required=False)
    resourceType = forms.ChoiceField(label="Resource type", choices=[(k, k) for k in SCHEMA])
    scopes = forms.MultipleChoiceField(label="Authorization scopes", widget=forms.CheckboxSelectMultiple,
                                       choices=sorted({(s, s) for kind in SCHEMA for s in SCHEMA[kind]}))
    resources = LinesField(label="Specific resources, one per line (ids; a username or client id); none: all of "
                                 "the type", required=False)
    policies = forms.MultipleChoiceField(label="Policies", required=False)
    decisionStrategy = forms.ChoiceField(label="Decision strategy", choices=[(s, s.capitalize()) for s in STRATEGIES])

    def __init__(self, *args, policies=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["policies"].choices = [(p, p) for p in policies]


class PolicyForm(forms.Form):
    type = forms.ChoiceField(label="Policy type", choices=[(t, _POLICY_LABELS[t]) for t in POLICY_TYPES])
    name = forms.CharField(label="Name")
    description = forms.CharField(label="Description", required=False)
    values = LinesField(label="Applies to, one per line (usernames, group paths, role names or clientId/role, "
                              "client ids)")
    logic = forms.ChoiceField(label="Logic", choices=(("POSITIVE", "Positive"), ("NEGATIVE", "Negative")))


def _typed(data):
    """Keycloak's typed policy representation from the policy form."""
    values = data["values"]
    typed = {"user": {"users": values}, "group": {"groups": [{"path": v} for v in values]},
             "role": {"roles": [{"id": v, "required": False} for v in values]}, "client": {"clients": values}}
    return {**{k: data[k] for k in ("name", "description", "logic") if data[k]}, **typed[data["type"]]}


def _change(request, realm, client, change, kind, sub_path, operation, representation=None):
    """A change of the settings on the schema (the resources of objects no permission names any
    more removed, as Keycloak's removeOrphanResources), checked as an import of them would be."""
    def on_schema(settings):
        schema_settings(client, settings)
        change(settings)
        named = {n for p in settings["policies"] if p["type"] == "scope" for n in config_list(p, "resources")}
        settings["resources"] = [r for r in settings["resources"] if r["name"] in SCHEMA or r["name"] in named]
        check_admin_permissions(realm, client, settings)
    write(client, on_schema)
    admin_events.record(realm, operation, kind, f"clients/{client.pk}/authz/resource-server{sub_path}",
                        auth=console_auth(request), representation=representation)


def _apply(request, realm, client, action, data, post):
    if action == "add-permission":
        body = {k: v for k, v in data.items() if v not in ("", [])}

        def change(settings):  # the Admin API's way: a taken name refused, references checked
            store_policy(realm, settings, admin_permission(realm, settings, body))
        _change(request, realm, client, change, "AUTHORIZATION_POLICY", "/permission/scope", "CREATE", body)
        return f"Permission {data['name']} created."
    if action == "add-policy":
        body = _typed(data)
        _change(request, realm, client, lambda s: store_policy(realm, s, typed_to_stored(s, data["type"], body)),
                "AUTHORIZATION_POLICY", f"/policy/{data['type']}", "CREATE", body)
        return f"Policy {data['name']} created."
    if action == "delete":
        settings = schema_settings(client, copy.deepcopy(client.authorization_settings))
        if not any(p["id"] == post.get("id") for p in settings["policies"]):
            raise Http404("No such permission or policy.")
        _change(request, realm, client, lambda s: remove_policy(s, post["id"]), "AUTHORIZATION_POLICY",
                f"/policy/{post['id']}", "DELETE")
        return "Deleted."
    raise Http404("No such action.")


def view(model_admin, request):
    realm = current_realm(request)
    if realm is None or not realm.admin_permissions_enabled:
        raise Http404("Admin permissions are not enabled for this realm.")
    admin = console_admin(request)
    may_manage = can(admin, realm, "manage-authorization")
    if not (may_manage or can(admin, realm, "view-authorization")):
        raise PermissionDenied
    client = permissions_client(realm) if may_manage else Client.objects.filter(
        realm=realm, client_id=PERMISSIONS_CLIENT).first()
    settings = schema_settings(client, copy.deepcopy(client.authorization_settings)) if client else {"policies": []}
    policy_names = [p["name"] for p in settings["policies"] if p["type"] != "scope"]
    forms_ = {"add-permission": PermissionForm(policies=policy_names), "add-policy": PolicyForm()}
    error, status = None, 200
    if request.method == "POST":
        if not may_manage:
            raise PermissionDenied
        action = request.POST.get("action", "")
        form_class = {"add-permission": partial(PermissionForm, policies=policy_names),
                      "add-policy": PolicyForm}.get(action)
        bound = form_class(request.POST) if form_class else None
        if bound is not None:
            forms_[action] = bound
        if bound is not None and not bound.is_valid():
            status = 400
        else:
            try:
                done = _apply(request, realm, client, action, bound.cleaned_data if bound else {}, request.POST)
            except RepresentationError as exc:
                error, status = exc.message if exc.path in ("", "name") else str(exc), 400
            else:
                model_admin.message_user(request, done, messages.SUCCESS)
                return HttpResponseRedirect(request.path)
    permissions = [{"id": p["id"], "name": p["name"], "description": p.get("description", ""),
                    "type": p["config"].get("defaultResourceType", ""), "scopes": config_list(p, "scopes"),
                    "resources": [r for r in config_list(p, "resources") if r not in SCHEMA] or ["All"],
                    "policies": config_list(p, "applyPolicies")}
                   for p in settings["policies"] if p["type"] == "scope"]
    policies = [p for p in settings["policies"] if p["type"] != "scope"]
    context = {**model_admin.admin_site.each_context(request), "opts": model_admin.opts, "title": "Permissions",
               "realm": realm, "may_manage": may_manage, "permissions": permissions, "policies": policies,
               "permission_form": forms_["add-permission"], "policy_form": forms_["add-policy"], "error": error}
    return TemplateResponse(request, "admin/console/authz/admin_permissions.html", context, status=status)


def urls(model_admin):
    return [path("admin-permissions/", model_admin.admin_site.admin_view(partial(view, model_admin)),
                 name="realms_admin_permissions")]


def navigation_entry(request):
    """The navigation's "Permissions" entry, or None (the switch off, or no right to see it)."""
    realm = current_realm(request)
    if realm is None or not realm.admin_permissions_enabled:
        return None
    admin = console_admin(request)
    if not (can(admin, realm, "view-authorization") or can(admin, realm, "manage-authorization")):
        return None
    return {"name": "Permissions", "object_name": "AdminPermissions", "admin_url": reverse("admin:realms_admin_permissions"),
            "add_url": None, "view_only": True, "perms": {"view": True}}
