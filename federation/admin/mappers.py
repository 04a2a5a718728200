"""An LDAP provider's mappers on the console (Keycloak's LDAP mapper page): added from the
provider's Mappers tab with their type (``?parent=<provider>&provider_id=<type>``), each type's
settings that this server honours as fields, checked as the Admin API checks them, and a group or
role mapper's two syncs as forms of their own after the settings form. Saving or deleting goes
back to the provider's page."""
import ldap
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import Http404, HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import path, reverse

from ..ldap import mappers
from ..ldap.config import MAPPER_TYPE, ConfigError
from ..ldap.connection import DirectoryUnavailable, _describe
from ..ldap.membership import MODES, MembershipError
from ..ldap.sync import DIRECTIONS, sync_mapper
from ..models import LdapComponent, LdapMapper
from .components import ComponentAdmin, ConfigForm, choice, component_event, config_form, english, flag, refuse, text

_READ_ONLY = ("read.only", flag(label="Read only", help_text="Never written to the directory."))
_ATTRIBUTE = (("user.model.attribute", text(required=True, label="User model attribute",
                                            help_text="username, email, firstName, lastName or an attribute name.")),
              ("ldap.attribute", text(required=True, label="LDAP attribute")), _READ_ONLY,
              ("is.binary.attribute", flag(label="Is binary attribute")))


def _membership(kind):
    singular, noun = kind[:-1], kind.upper()
    strategies = (f"LOAD_{noun}_BY_MEMBER_ATTRIBUTE", f"GET_{noun}_FROM_USER_MEMBEROF_ATTRIBUTE",
                  f"LOAD_{noun}_BY_MEMBER_ATTRIBUTE_RECURSIVELY")
    return (
        (f"{kind}.dn", text(required=True, label=f"LDAP {kind} DN")),
        (f"{singular}.name.ldap.attribute", text(initial="cn", label=f"{singular.capitalize()} name LDAP attribute")),
        (f"{singular}.object.classes", text(label=f"{singular.capitalize()} object classes",
                                            help_text="Comma separated; empty: groupOfNames (group for Active "
                                                      "Directory).")),
        (f"{kind}.ldap.filter", text(label="LDAP filter", help_text="Starts with ( and ends with ).")),
        (f"{kind}.relative.create.dn", text(label="Relative creation DN",
                                            help_text=f"Where new {kind} are created, under the {kind} DN.")),
        ("membership.ldap.attribute", text(initial="member", label="Membership LDAP attribute")),
        ("membership.attribute.type", choice([("DN", "DN"), ("UID", "UID")], initial="DN", required=True,
                                             label="Membership attribute type")),
        ("membership.user.ldap.attribute", text(label="Membership user LDAP attribute",
                                                help_text="Empty: the provider's username LDAP attribute.")),
        ("mode", choice([(m, m) for m in MODES], initial="READ_ONLY", required=True, label="Mode")),
        ("user.roles.retrieve.strategy", choice([(s, s) for s in strategies], initial=strategies[0], required=True,
                                                label=f"User {kind} retrieve strategy")),
        ("memberof.ldap.attribute", text(initial="memberOf", label="Member-of LDAP attribute")),
    )


# The settings of each mapper type that its class in federation.ldap.mappers reads.
SETTINGS = {
    "user-attribute-ldap-mapper": _ATTRIBUTE,
    "certificate-ldap-mapper": (*_ATTRIBUTE, ("is.derformatted", flag(label="DER formatted"))),
    "full-name-ldap-mapper": (("ldap.full.name.attribute", text(initial="cn", required=True,
                                                                label="LDAP full name attribute")), _READ_ONLY,
                              ("write.only", flag(label="Write only", help_text="Never read from the directory."))),
    "hardcoded-ldap-attribute-mapper": (
        ("ldap.attribute.name", text(required=True, label="LDAP attribute name")),
        ("ldap.attribute.value", text(required=True, label="LDAP attribute value",
                                      help_text="Written when an entry is created; ${RANDOM}: a random value."))),
    "hardcoded-attribute-mapper": (("user.model.attribute", text(required=True, label="User model attribute")),
                                   ("attribute.value", text(label="Attribute value"))),
    "hardcoded-ldap-role-mapper": (("role", text(required=True, label="Role",
                                                 help_text="A realm role, or clientId.role for a client role.")),),
    "hardcoded-ldap-group-mapper": (("group", text(required=True, label="Group", help_text="The group's path.")),),
    "group-ldap-mapper": (*_membership("groups"),
                          ("preserve.group.inheritance", flag(initial=True, label="Preserve group inheritance")),
                          ("ignore.missing.groups", flag(label="Ignore missing groups")),
                          ("mapped.group.attributes", text(label="Mapped group attributes",
                                                           help_text="Comma separated.")),
                          ("drop.non.existing.groups.during.sync", flag(label="Drop non-existing groups during "
                                                                              "sync")),
                          ("groups.path", text(initial="/", label="Groups path"))),
    "role-ldap-mapper": (*_membership("roles"),
                         ("use.realm.roles.mapping", flag(initial=True, label="Use realm roles mapping")),
                         ("client.id", text(label="Client ID", help_text="The client of the roles when realm "
                                                                         "roles mapping is off."))),
    "msad-user-account-control-mapper": (),
}
assert set(SETTINGS) == set(mappers.MAPPERS), "every mapper type has its settings here"
_SYNCS = {"group-ldap-mapper": "groups", "role-ldap-mapper": "roles"}


class MapperForm(ConfigForm):
    provider_type = MAPPER_TYPE
    parent = None  # the provider (set per form class)

    class Meta(ConfigForm.Meta):
        model = LdapMapper

    def check(self, config):
        try:
            mappers.validate(self.provider_id, config, self.parent.config)
        except ConfigError as exc:
            refuse(exc)


def _form(provider_id, parent):
    return config_form(MapperForm, "MapperForm", SETTINGS[provider_id], provider_id=provider_id, parent=parent)


@admin.register(LdapMapper)
class LdapMapperAdmin(ComponentAdmin):
    change_form_template = "admin/federation/change_form.html"
    list_display = ("name", "provider_id")
    readonly_fields = ("mapper_type", "provider")

    def has_module_permission(self, request):
        return False  # reached from its provider's page

    def has_add_permission(self, request):
        # A mapper is added from its provider's Mappers tab, which names the provider and the type.
        return bool(request.GET.get("parent")) and super().has_add_permission(request)

    @admin.display(description="Mapper type")
    def mapper_type(self, obj):
        return obj.provider_id

    @admin.display(description="LDAP provider")
    def provider(self, obj):
        parent = LdapComponent.objects.filter(pk=obj.parent_id).first()
        return parent.name if parent else "-"

    def _target(self, request, obj):
        """(provider, mapper type) of the page: the mapper's, or for a new one the query's."""
        if obj is not None:
            return LdapComponent.objects.filter(pk=obj.parent_id).first(), obj.provider_id
        parent = LdapComponent.objects.filter(pk=request.GET.get("parent", "")).first()
        kind = request.GET.get("provider_id", "")
        if parent is None or kind not in SETTINGS or not self.may(request, self.manage_role, parent):
            raise Http404("Add a mapper from its LDAP provider's Mappers tab.")
        return parent, kind

    def get_form(self, request, obj=None, change=False, **kwargs):
        parent, kind = self._target(request, obj)
        if parent is None:
            raise Http404("The mapper's LDAP provider is gone.")
        request._mapper_target = parent, kind
        kwargs["form"] = _form(kind, parent)
        kwargs["fields"] = ["realm", "name", *(key for key, _ in SETTINGS[kind])]
        return super().get_form(request, obj, change=change, **kwargs)

    def get_fieldsets(self, request, obj=None):
        _, kind = self._target(request, obj)
        return ((None, {"fields": ["realm", "provider", "mapper_type", "name", *(k for k, _ in SETTINGS[kind])]}),)

    def save_model(self, request, obj, form, change):
        if not change:
            parent, kind = request._mapper_target
            obj.realm_id, obj.parent_id, obj.provider_id = parent.realm_id, parent.pk, kind
        super().save_model(request, obj, form, change)

    def _provider_page(self, obj):
        return HttpResponseRedirect(reverse("admin:federation_ldapcomponent_change", args=[obj.parent_id]) + "#mappers")

    def response_add(self, request, obj, post_url_continue=None):
        if "_continue" in request.POST or "_addanother" in request.POST:
            return super().response_add(request, obj, post_url_continue)
        self.message_user(request, f"Mapper {obj.name} added.", messages.SUCCESS)
        return self._provider_page(obj)

    def response_change(self, request, obj):
        if "_continue" in request.POST or "_addanother" in request.POST:
            return super().response_change(request, obj)
        self.message_user(request, f"Mapper {obj.name} saved.", messages.SUCCESS)
        return self._provider_page(obj)

    def response_delete(self, request, obj_display, obj_id):
        parent_id = getattr(request, "_mapper_parent", None)
        self.message_user(request, f"Mapper {obj_display} deleted.", messages.SUCCESS)
        if parent_id:
            return HttpResponseRedirect(reverse("admin:federation_ldapcomponent_change", args=[parent_id]) + "#mappers")
        return super().response_delete(request, obj_display, obj_id)

    def delete_model(self, request, obj):
        request._mapper_parent = obj.parent_id
        super().delete_model(request, obj)

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        kind = _SYNCS.get(obj.provider_id) if obj is not None else None
        if kind and self.has_change_permission(request, obj):
            context["component_actions"] = [
                (reverse("admin:federation_ldapmapper_sync", args=[obj.pk, direction]), label) for direction, label in (
                    (DIRECTIONS[0], f"Sync LDAP {kind} to Keycloak"), (DIRECTIONS[1], f"Sync Keycloak {kind} to LDAP"))]
        return super().render_change_form(request, context, add, change, form_url, obj)

    def get_urls(self):
        return [path("<path:object_id>/sync/<slug:direction>/", self.admin_site.admin_view(self.sync_view),
                     name="federation_ldapmapper_sync"), *super().get_urls()]

    def sync_view(self, request, object_id, direction):
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        mapper = self.get_object(request, object_id)
        provider = LdapComponent.objects.filter(pk=mapper.parent_id).first() if mapper else None
        if provider is None or direction not in DIRECTIONS:
            raise Http404("No such mapper or sync.")
        if not self.has_change_permission(request, mapper):
            raise PermissionDenied
        try:
            result = sync_mapper(provider, mapper.pk, direction)
        except (MembershipError, DirectoryUnavailable, ConfigError, ldap.LDAPError) as exc:
            self.message_user(request, f"{mapper.name}: {_why(exc)}", messages.ERROR)
        else:
            with transaction.atomic():
                component_event(request, "ACTION", provider, f"/mappers/{mapper.pk}/sync")
            self.message_user(request, f"{mapper.name}: {result['status'] if result else 'nothing to synchronize'}",
                              messages.SUCCESS)
        return HttpResponseRedirect(reverse("admin:federation_ldapmapper_change", args=[mapper.pk]))


def _why(exc):
    if isinstance(exc, DirectoryUnavailable):
        return f"The directory could not be reached: {exc}"
    if isinstance(exc, ldap.LDAPError):
        return f"The directory refused: {_describe(exc)}"
    return english(exc)
