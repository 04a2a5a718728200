"""An identity provider's mappers (its page's "Mappers" tab): the list, "Add mapper" with the
mapper types compatible with the provider's type, a mapper's page with its type's properties as
form fields (Keycloak's ConfigProperty types: String, Text, boolean, List, Role, Group, Map ...),
and delete. Changes go through ``realms.brokering.admin`` (its checks and admin events).

The mapper type is chosen in a small form of its own above the mapper's form, as Keycloak's
"Mapper type" select changes the fields below it; the mapper's form has one submit button, so
Enter in any of its fields saves."""
import json

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponseNotAllowed, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from ..audit.admin_events import console_auth
from ..brokering import admin as idp_admin
from ..brokering.mappers import get_mapper_type, mapper_types
from ..models import IdentityProviderMapper
from .sessions import post_button
from .widgets import AttributesField


def compatible_types(idp):
    return sorted((t for t in mapper_types() if t.applies_to(idp.provider_id)), key=lambda t: (t.name, t.id))


def _change_url(idp):
    return reverse("admin:realms_identityprovider_change", args=[idp.pk])


def mappers_table(idp):
    """The Mappers tab: each mapper with its type, a link to its page and Delete."""
    add = format_html('<div class="console-actions"><a class="button" id="idp-add-mapper" href="{}">Add mapper</a>'
                      "</div>", reverse("admin:realms_identityprovider_mapper_add", args=[idp.pk]))
    rows = list(idp.mappers.order_by("name"))
    if not rows:
        return format_html("{}<p>No mappers.</p>", add)

    def type_name(mapper):
        mapper_type = get_mapper_type(mapper.mapper_type)
        return mapper_type.name if mapper_type else f"{mapper.mapper_type} (not available on this server)"

    body = format_html_join("", '<tr><td><a href="{}">{}</a></td><td>{}</td><td>{}</td></tr>', (
        (reverse("admin:realms_identityprovider_mapper", args=[idp.pk, m.pk]), m.name, type_name(m),
         post_button(reverse("admin:realms_identityprovider_mapper_delete", args=[idp.pk, m.pk]), "Delete",
                     danger=True, confirm=f"Delete mapper {m.name}?"))
        for m in rows))
    return format_html('{}<table class="console-table"><thead><tr><th>Name</th><th>Type</th><th></th></tr></thead>'
                       "<tbody>{}</tbody></table>", add, body)


class MapField(AttributesField):
    """Keycloak's ``Map`` property: rows of key and value, stored as its JSON list of
    ``{"key", "value"}``."""

    def __init__(self, **kwargs):
        super().__init__(multivalued=False, **kwargs)

    def prepare_value(self, value):
        if isinstance(value, str):
            try:
                value = {entry["key"]: entry.get("value", "") for entry in json.loads(value or "[]")}
            except (ValueError, TypeError, KeyError):
                value = {}
        return super().prepare_value(value)


def property_field(prop):
    """The form field of one of Keycloak's ConfigProperty representations."""
    kind = prop.get("type") or "String"
    common = {"label": prop.get("label") or prop["name"], "help_text": prop.get("helpText", ""), "required": False}
    if kind == "boolean":
        return forms.BooleanField(**common)
    if kind == "List" and prop.get("options"):
        return forms.ChoiceField(choices=[(o, o) for o in prop["options"]], **common)
    if kind == "Map":
        return MapField(**common)
    if kind == "Text":
        return forms.CharField(widget=forms.Textarea(attrs={"rows": 4, "cols": 60}), **common)
    if kind == "Role":
        common["help_text"] = common["help_text"] or "A realm role's name, or a client role as clientId.role."
    if kind == "Group":
        common["help_text"] = common["help_text"] or "The group's path, as /parent/child."
    return forms.CharField(widget=forms.TextInput(attrs={"size": 40}), **common)


class MapperForm(forms.Form):
    name = forms.CharField(max_length=255, label="Name")

    def __init__(self, *args, mapper_type, instance=None, **kwargs):
        initial = {}
        if instance is not None:
            initial["name"] = instance.name
        stored = dict(instance.config or {}) if instance is not None else {}
        super().__init__(*args, initial=initial, **kwargs)
        self.mapper_type, self.properties = mapper_type, list(mapper_type.properties)
        for number, prop in enumerate(self.properties):
            field = property_field(prop)
            value = stored.get(prop["name"], prop.get("defaultValue") if instance is None else None)
            if value is not None:
                field.initial = (str(value).lower() == "true") if isinstance(field, forms.BooleanField) else value
            self.fields[f"property_{number}"] = field
        if instance is not None:
            self.fields["name"].disabled = True  # Keycloak's mapper name is fixed once made

    def config(self):
        """The mapper's config: Keycloak's string map."""
        config = {}
        for number, prop in enumerate(self.properties):
            value = self.cleaned_data.get(f"property_{number}")
            if isinstance(value, bool):
                value = "true" if value else "false"
            elif isinstance(value, dict):
                value = json.dumps([{"key": k, "value": v} for k, v in value.items()]) if value else ""
            config[prop["name"]] = "" if value is None else str(value)
        return config


def urls(model_admin):
    view = model_admin.admin_site.admin_view
    return [
        path("<path:idp_id>/mappers/add/", view(lambda r, idp_id: mapper_view(model_admin, r, idp_id, None)),
             name="realms_identityprovider_mapper_add"),
        path("<path:idp_id>/mappers/<str:mapper_id>/delete/",
             view(lambda r, idp_id, mapper_id: delete_view(model_admin, r, idp_id, mapper_id)),
             name="realms_identityprovider_mapper_delete"),
        path("<path:idp_id>/mappers/<str:mapper_id>/",
             view(lambda r, idp_id, mapper_id: mapper_view(model_admin, r, idp_id, mapper_id)),
             name="realms_identityprovider_mapper"),
    ]


def _provider(model_admin, request, idp_id):
    idp = model_admin.get_object(request, idp_id)
    if idp is None:
        raise Http404("No such identity provider.")
    if not model_admin.has_view_permission(request, idp):
        raise PermissionDenied
    return idp


def mapper_view(model_admin, request, idp_id, mapper_id):
    """A mapper's page (``mapper_id``) or "Add mapper" (None, the type from ``?type=``)."""
    idp = _provider(model_admin, request, idp_id)
    mapper = get_object_or_404(IdentityProviderMapper, identity_provider=idp, pk=mapper_id) if mapper_id else None
    choices = compatible_types(idp)
    if mapper is not None:
        mapper_type = get_mapper_type(mapper.mapper_type)
        if mapper_type is None:
            model_admin.message_user(request, f"The mapper type {mapper.mapper_type} is not available on this "
                                              "server.", messages.ERROR)
            return HttpResponseRedirect(_change_url(idp) + "#mappers")
    else:
        if not choices:
            model_admin.message_user(request, "No mapper type applies to this provider.", messages.ERROR)
            return HttpResponseRedirect(_change_url(idp) + "#mappers")
        mapper_type = next((t for t in choices if t.id == request.GET.get("type")), choices[0])
    may_change = model_admin.has_change_permission(request, idp)
    form = MapperForm(request.POST if request.method == "POST" else None, mapper_type=mapper_type, instance=mapper)
    if request.method == "POST":
        if not may_change:
            raise PermissionDenied
        if form.is_valid():
            try:
                saved = _save(request, idp, mapper, mapper_type, form)
            except idp_admin.Refused as exc:
                form.add_error(None, exc.message)
            else:
                model_admin.message_user(request, f"Mapper {saved.name} saved.", messages.SUCCESS)
                return HttpResponseRedirect(_change_url(idp) + "#mappers")
    context = {**model_admin.admin_site.each_context(request), "opts": model_admin.opts, "original": idp,
               "title": f"{'Mapper details' if mapper else 'Add Identity Provider Mapper'}",
               "idp": idp, "mapper": mapper, "form": form, "mapper_type": mapper_type, "mapper_types": choices,
               "may_change": may_change, "back": _change_url(idp) + "#mappers",
               "adminform": admin.helpers.AdminForm(form, [(None, {"fields": list(form.fields)})], {})}
    return TemplateResponse(request, "admin/console/identity_providers/mapper.html", context)


def _save(request, idp, mapper, mapper_type, form):
    auth = console_auth(request)
    if mapper is None:
        new = IdentityProviderMapper(name=form.cleaned_data["name"].strip(), mapper_type=mapper_type.id,
                                     config=form.config())
        return idp_admin.create_mapper(idp.realm, idp, new, auth=auth)
    changed = IdentityProviderMapper(name=mapper.name, mapper_type=mapper.mapper_type, config=form.config())
    return idp_admin.update_mapper(idp.realm, idp, changed, mapper, auth=auth)


def delete_view(model_admin, request, idp_id, mapper_id):
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    idp = _provider(model_admin, request, idp_id)
    if not model_admin.has_change_permission(request, idp):
        raise PermissionDenied
    mapper = get_object_or_404(IdentityProviderMapper, identity_provider=idp, pk=mapper_id)
    idp_admin.delete_mapper(idp.realm, mapper, auth=console_auth(request))
    model_admin.message_user(request, f"Mapper {mapper.name} deleted.", messages.SUCCESS)
    return HttpResponseRedirect(_change_url(idp) + "#mappers")


