"""Groups (a tree), with their role mappings."""
from django import forms
from django.contrib import admin

from ..models import Group
from .audit import role_ids, role_mapping_events
from .base import ConsoleAdmin, realm_owned_list_filter


def _descendants(group):
    found, frontier = set(), {group.pk}
    while frontier:
        frontier = set(Group.objects.filter(parent_id__in=frontier).values_list("pk", flat=True)) - found
        found |= frontier
    return found


class GroupForm(forms.ModelForm):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk and "parent" in self.fields:
            # A group cannot sit under itself or its own subgroups (the tree would become a loop).
            excluded = _descendants(self.instance) | {self.instance.pk}
            self.fields["parent"].queryset = self.fields["parent"].queryset.exclude(pk__in=excluded)


@admin.register(Group)
class GroupAdmin(ConsoleAdmin):
    view_role, manage_role, list_role = "view-users", "manage-users", "query-groups"
    form = GroupForm
    list_display = ("path", "description", "member_count")
    list_filter = realm_owned_list_filter()
    search_fields = ("name",)
    filter_horizontal = ("roles",)
    fields = ("realm", "name", "parent", "description", "attributes", "roles")

    @admin.display(description="members")
    def member_count(self, obj):
        return obj.members.count()

    def mapping_snapshot(self, obj):
        return {"roles": role_ids(obj)}

    def mapping_events(self, request, obj, before, after):
        role_mapping_events(request, obj.realm, f"groups/{obj.pk}", before["roles"], after["roles"])
