"""A user's "Identity provider links" tab (Keycloak's): the linked providers (the provider, the
user's id and name there; Unlink), and the realm's other providers with "Link account", which
links the user to an account the admin names (Keycloak's POST
``users/{id}/federated-identity/{alias}``). Links and unlinks go through
``realms.brokering.admin`` (its checks, messages and admin events), as the Admin API's do."""
from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from ..administration.admin_permissions import can, console_admin
from ..audit.admin_events import console_auth
from ..brokering import admin as idp_admin
from ..models import FederatedIdentity, IdentityProvider

TAB = "identity-provider-links"


class FederatedIdentityInline(admin.TabularInline):
    """The links, read-only; Delete unlinks (``UserAdmin.save_formset`` calls ``unlink``)."""

    classes = (f"tab-{TAB}",)
    model = FederatedIdentity
    fields = readonly_fields = ("identity_provider", "subject", "user_name")
    verbose_name, verbose_name_plural = "identity provider link", "linked identity providers"
    extra = 0
    can_delete = True

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return obj is not None and can(console_admin(request), obj.realm, "manage-users", obj)


def unlink(request, user, formset):
    """The links the admin ticked Delete for, removed with their admin events."""
    formset.save(commit=False)
    for link in formset.deleted_objects:
        idp_admin.remove_link(user.realm, user, link, auth=console_auth(request))


def available(user):
    """The realm's providers the user has no link to, each with "Link account" (shown to an
    admin who may change the user)."""
    linked = FederatedIdentity.objects.filter(user=user).values("identity_provider_id")
    providers = list(IdentityProvider.objects.filter(realm=user.realm).exclude(pk__in=linked).order_by("alias"))
    if not providers:
        return "None."
    rows = format_html_join("", "<tr><td>{}</td><td>{}</td></tr>", (
        (idp.display_name or idp.alias, format_html('<a class="button" href="{}">Link account</a>', reverse(
            "admin:realms_user_link_idp", args=[user.pk, idp.alias])))
        for idp in providers))
    return format_html('<table class="console-table"><thead><tr><th>Name</th><th></th></tr></thead><tbody>{}'
                       "</tbody></table>", rows)


class LinkForm(forms.Form):
    user_id = forms.CharField(max_length=255, label="User ID", help_text="The user's id at the identity provider.")
    user_name = forms.CharField(max_length=255, label="Username",
                                help_text="The user's name at the identity provider.")


def link_view(model_admin, request, object_id, alias):
    user = model_admin.get_object(request, object_id)
    if user is None:
        raise Http404("No such user.")
    if not model_admin.has_change_permission(request, user):
        raise PermissionDenied
    idp = get_object_or_404(IdentityProvider, realm=user.realm, alias=alias)
    form = LinkForm(request.POST or None)
    back = reverse("admin:realms_user_change", args=[user.pk]) + f"#{TAB}"
    if request.method == "POST" and form.is_valid():
        try:
            idp_admin.add_link(user.realm, user, idp, form.cleaned_data["user_id"].strip(),
                               form.cleaned_data["user_name"].strip(), auth=console_auth(request))
        except idp_admin.Refused as exc:
            form.add_error(None, exc.message)
        else:
            model_admin.message_user(request, f"{user.username} is linked to {idp.display_name or idp.alias}.",
                                     messages.SUCCESS)
            return HttpResponseRedirect(back)
    context = {**model_admin.admin_site.each_context(request), "opts": model_admin.opts, "original": user,
               "title": f"Link account at {idp.display_name or idp.alias}", "form": form,
               "adminform": admin.helpers.AdminForm(form, [(None, {"fields": list(form.base_fields)})], {})}
    return TemplateResponse(request, "admin/realms/authenticationflow/tool.html", context)


def urls(model_admin):
    return [path("<path:object_id>/identity-provider-links/<str:alias>/",
                 model_admin.admin_site.admin_view(lambda r, object_id, alias: link_view(model_admin, r, object_id,
                                                                                         alias)),
                 name="realms_user_link_idp")]
