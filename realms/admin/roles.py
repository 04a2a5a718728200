"""Realm and client roles, with their composites."""
from django import forms
from django.contrib import admin

from ..models import Role
from .base import ConsoleAdmin, realm_owned_list_filter
from .names import resolved


class RoleKindFilter(admin.SimpleListFilter):
    title = "kind"
    parameter_name = "kind"

    def lookups(self, request, model_admin):
        return [("realm", "Realm roles"), ("client", "Client roles")]

    def queryset(self, request, queryset):
        if self.value() == "realm":
            return queryset.filter(client__isnull=True)
        if self.value() == "client":
            return queryset.filter(client__isnull=False)
        return queryset


class RoleForm(forms.ModelForm):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk and "composites" in self.fields:
            self.fields["composites"].queryset = self.fields["composites"].queryset.exclude(pk=self.instance.pk)


@admin.register(Role)
class RoleAdmin(ConsoleAdmin):
    form = RoleForm
    list_display = ("name", "client", "shown_description", "is_composite")
    list_filter = realm_owned_list_filter(RoleKindFilter)
    list_select_related = ("client",)
    search_fields = ("name", "description", "client__client_id")
    filter_horizontal = ("composites",)
    fields = ("realm", "client", "name", "description", "attributes", "composites")

    def get_readonly_fields(self, request, obj=None):
        return ("client",) if obj is not None else ()  # a role never moves between clients

    @admin.display(description="description", ordering="description")
    def shown_description(self, obj):
        return resolved(obj.realm, obj.description)

    @admin.display(boolean=True, description="composite")
    def is_composite(self, obj):
        return obj.composite
