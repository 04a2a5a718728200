"""What every page of the console shares: the site's titles, the form pieces and ConsoleAdmin,
the base of every model admin (realm scoping plus an admin event for each change)."""
from django import forms
from django.contrib import admin, messages
from django.contrib.admin.views.autocomplete import AutocompleteJsonView
from django.contrib.auth.models import Group as AuthGroup
from django.db import models
from django.http import HttpResponseRedirect

from ..administration import console_auth
from ..administration.admin_permissions import (
    LIST_SCOPES,
    TYPE_OF,
    administered_realms,
    administers_some_realm,
    can,
    console_admin,
    visible,
)
from ..errors import StoreRefused
from ..models import Realm, RealmOwned, Role
from .audit import admin_event, object_event, owning_realm, resource_of
from .switcher import RealmFilter, current_realm, realm_of, set_current_realm
from .widgets import attributes_field

admin.site.site_header = "Identity administration"
admin.site.site_title = "Identity admin"
admin.site.index_title = "Realms and what they own"


def console_access(request):
    """Every console page: an enabled user, still signed in to their realm, who administers some
    realm (what they may do there each page asks ``can``). Answered once per request: Django's
    admin asks it for the page and again for each model of the menu."""
    if not hasattr(request, "_console_access"):
        request._console_access = (request.user.is_active and console_auth.session_alive(request)
                                   and administers_some_realm(console_admin(request)))
    return request._console_access


admin.site.has_permission = console_access
# Operators are master-realm users with the admin role; Django's own auth groups play no part.
if admin.site.is_registered(AuthGroup):
    admin.site.unregister(AuthGroup)


class LinesField(forms.Field):
    """A list of strings (redirect URIs, web origins ...) edited one per line."""

    widget = forms.Textarea(attrs={"rows": 4, "cols": 80})

    def prepare_value(self, value):
        return "\n".join(value) if isinstance(value, (list, tuple)) else (value or "")

    def to_python(self, value):
        if isinstance(value, (list, tuple)):
            return list(value)
        return [line.strip() for line in (value or "").splitlines() if line.strip()]

    def has_changed(self, initial, data):
        return self.to_python(initial) != self.to_python(data)


# The scope a role needs to be picked for a field (Keycloak's canMapRole, canMapComposite and
# canMapClientScope); users, groups and clients are picked among those the admin may list.
ROLE_PICKS = {"roles": ("map-role",), "composites": ("map-role-composite",), "scope_roles": ("map-role-client-scope",)}


def pickable(request, db_field, choices, realm):
    """The ``choices`` (objects of ``realm``) of the picker of ``db_field`` that the signed-in
    admin may pick, decided by realms.administration.admin_permissions (``visible``) as the Admin REST API
    decides: a group's admin picks among the users and groups they may list, and the roles they
    may map."""
    kind = TYPE_OF.get(db_field.related_model)
    if kind is None or (kind == "Roles" and db_field.name not in ROLE_PICKS):
        return choices
    return visible(console_admin(request), realm, kind, choices, ROLE_PICKS.get(db_field.name))


class PickerAutocomplete(AutocompleteJsonView):
    """The console's autocomplete endpoint answers a picker's choices as the picker offers them:
    in the current realm, narrowed by ``pickable`` (Django's answers whatever the related model's
    admin lists, in every realm)."""

    def get_queryset(self):
        choices = super().get_queryset()
        if not issubclass(choices.model, RealmOwned):
            return choices
        realm = current_realm(self.request)
        if realm is None:
            return choices.none()
        return pickable(self.request, self.source_field, choices.filter(realm=realm), realm)


admin.site.autocomplete_view = PickerAutocomplete.as_view(admin_site=admin.site)


def keep_unoffered(form):
    """A many-to-many picker offers what the admin may pick; what the object holds beyond it (a
    group another admin governs, a role they may not map) stays: saving changes what was offered."""
    for name, field in form.fields.items():
        if isinstance(field, forms.ModelMultipleChoiceField) and name in form.cleaned_data:
            held = getattr(form.instance, name).exclude(pk__in=field.queryset.values("pk"))
            form.cleaned_data[name] = [*form.cleaned_data[name], *held]


class RealmScopedMixin:
    """Shared by the model admins and inlines: choices limited to the edited object's realm and
    to what the admin may pick there (``pickable``), list-valued JSON fields edited one per line."""

    line_list_fields = ()

    def form_realm(self, request):
        return getattr(request, "_console_form_realm", None)

    def remember_form_realm(self, request, obj):
        """``obj`` is the object edited (for an inline, its parent), None or unsaved when adding."""
        if isinstance(obj, Realm) or (obj is None and self.model is Realm):
            realm = obj if obj is not None and not obj._state.adding else None  # a new realm owns nothing yet
        else:
            realm = (realm_of(obj) if obj is not None else None) or current_realm(request)
        request._console_form_realm = realm
        request._console_form_object = obj

    def held_values(self, request, db_field):
        """What the foreign key ``db_field`` holds now on the object edited (for an inline, on its
        parent's rows): kept on offer, so that saving leaves a value the admin may not pick as it is."""
        obj = getattr(request, "_console_form_object", None)
        if not db_field.many_to_one or obj is None or obj._state.adding:
            return []
        if isinstance(obj, self.model):
            rows = self.model.objects.filter(pk=obj.pk)
        else:
            link = getattr(self, "fk_name", None) or next(
                f.name for f in self.model._meta.fields if f.is_relation and f.related_model is type(obj))
            rows = self.model.objects.filter(**{link: obj})
        return list(rows.values_list(db_field.attname, flat=True))

    def get_field_queryset(self, db, db_field, request):
        model = db_field.related_model
        realm = self.form_realm(request)
        if db_field.name == "realm" and model is Realm:
            return Realm.objects.filter(pk=realm.pk if realm else None)
        if not issubclass(model, RealmOwned):
            return super().get_field_queryset(db, db_field, request)
        queryset = super().get_field_queryset(db, db_field, request) or model._default_manager.using(db)
        if model is Role:
            queryset = queryset.select_related("client")
        if realm is None:
            return queryset.none()
        queryset = queryset.filter(realm=realm)
        offered = pickable(request, db_field, queryset, realm)
        held = self.held_values(request, db_field) if offered is not queryset else None
        return offered | queryset.filter(pk__in=held) if held else offered

    def formfield_for_dbfield(self, db_field, request, **kwargs):
        if db_field.name == "attributes" and isinstance(db_field, models.JSONField):
            field = attributes_field(db_field.model, label="Attributes")
            field.help_text = "A key on several rows has several values." if field.multivalued else "One value a key."
            return field
        if db_field.name in self.line_list_fields:
            return LinesField(required=not db_field.blank, label=db_field.verbose_name.capitalize(),
                              help_text="One per line.")
        return super().formfield_for_dbfield(db_field, request, **kwargs)


class ViewOnly:
    """A page of records the console shows and never edits (sessions, events, jobs): what changes
    them is an action of its own, or nothing."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class RealmScopedInline(RealmScopedMixin, admin.TabularInline):
    extra = 0
    formfield_overrides = {models.TextField: {"widget": forms.TextInput(attrs={"size": 50})}}

    def get_formset(self, request, obj=None, **kwargs):
        self.remember_form_realm(request, obj)
        return super().get_formset(request, obj, **kwargs)


class ConsoleAdmin(RealmScopedMixin, admin.ModelAdmin):
    """Base of every model admin here: realm scoping plus admin events for each change."""

    show_full_result_count = False  # as Keycloak's tables, no "N total" beside a search: one COUNT less a page
    change_form_template = "admin/console/change_form.html"
    # (slug, label) of the object page's tabs, in order; a fieldset or inline joins one with the
    # CSS class ``tab-<slug>`` (fieldset option "classes", inline attribute ``classes``).
    tabs = ()

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        extra_context = {"console_tabs": self.tabs, **(extra_context or {})}
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except StoreRefused as exc:
            # A user store refused the change as it was saved (an LDAP provider or mapper in
            # READ_ONLY, the directory's schema): the form's transaction is rolled back; say why.
            self.message_user(request, exc.detail, messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())

    def get_object(self, request, object_id, from_field=None):
        # An object's page belongs to its realm (as the realm is part of Keycloak's console URLs):
        # opening it makes that realm the current one, so the header and lists follow.
        obj = super().get_object(request, object_id, from_field)
        realm = realm_of(obj) if obj is not None else None
        if realm is not None:
            set_current_realm(request, realm)
        return obj

    def get_form(self, request, obj=None, change=False, **kwargs):
        self.remember_form_realm(request, obj)
        form = super().get_form(request, obj, change=change, **kwargs)
        realm_field = form.base_fields.get("realm")
        if realm_field is not None:
            # Shown but fixed: an object never moves between realms, and keeping the field in
            # the form lets Django validate the per-realm unique names before saving.
            realm = self.form_realm(request)
            realm_field.widget = realm_field.widget.widget  # no add/change links beside a fixed value
            realm_field.disabled = True
            realm_field.initial = realm.pk if realm else None
            realm_field.help_text = "Switch realms with the selector at the top of the page."
        return form

    # What the console may show and change, decided by realms.administration.admin_permissions.can (the same
    # function as the Admin REST API): the realm-management roles of this page's objects, and
    # where one exists the role that lists them (users: query-users), as Keycloak's console.
    view_role, manage_role, list_role = "view-realm", "manage-realm", None

    def get_queryset(self, request):
        """Users, groups and clients: those the admin may list in the realms they administer
        (``visible``, as the Admin REST API lists them); an object left out has no page for them."""
        objects = super().get_queryset(request)
        kind = TYPE_OF.get(self.model)
        if request.user.is_superuser or kind not in LIST_SCOPES:
            return objects
        admin = console_admin(request)
        shown = objects.none()
        for realm in administered_realms(admin):
            shown |= visible(admin, realm, kind, objects.filter(realm=realm))
        return shown

    def may(self, request, role, obj=None):
        realm = (realm_of(obj) if obj is not None else None) or current_realm(request)
        target = obj if type(obj) in TYPE_OF else None
        return realm is not None and can(console_admin(request), realm, role, target)

    def has_module_permission(self, request):
        return console_access(request)

    def has_view_permission(self, request, obj=None):
        roles = (self.view_role, self.manage_role) + ((self.list_role,) if obj is None and self.list_role else ())
        return any(self.may(request, role, obj) for role in roles)

    def has_change_permission(self, request, obj=None):
        return self.may(request, self.manage_role, obj)

    def has_delete_permission(self, request, obj=None):
        return self.may(request, self.manage_role, obj)

    def has_add_permission(self, request):
        # Everything but a realm is added into the current realm: nothing to add without one.
        if self.model is not Realm and current_realm(request) is None:
            return False
        return self.may(request, self.manage_role)

    def change_event(self, request, operation, obj):
        """The admin event of a change made on this page (CREATE, UPDATE, DELETE). An admin whose
        service functions record their own events (webhook endpoints) records nothing here."""
        object_event(request, operation, obj)

    # Mapping relations (many-to-many) whose changes are recorded as their own events.
    def mapping_snapshot(self, obj):
        return {}

    def mapping_events(self, request, obj, before, after):
        pass

    def save_model(self, request, obj, form, change):
        if change:
            request._console_before = self.mapping_snapshot(obj)
        super().save_model(request, obj, form, change)

    def save_related(self, request, form, formsets, change):
        if change:
            keep_unoffered(form)
        super().save_related(request, form, formsets, change)
        obj = form.instance
        before = getattr(request, "_console_before", None) or {key: set() for key in self.mapping_snapshot(obj)}
        self.change_event(request, "UPDATE" if change else "CREATE", obj)
        self.mapping_events(request, obj, before, self.mapping_snapshot(obj))

    def save_formset(self, request, form, formset, change):
        deleted = [(f.instance, resource_of(f.instance), owning_realm(f.instance))
                   for f in formset.deleted_forms if f.instance.pk]
        instances = formset.save(commit=False)
        for obj in formset.deleted_objects:
            obj.delete()
        realm = realm_of(form.instance)
        for obj in instances:
            if isinstance(obj, RealmOwned) and not obj.realm_id:
                obj.realm = realm
            obj.save()
        formset.save_m2m()
        for _obj, (resource_type, resource_path), obj_realm in deleted:
            admin_event(request, obj_realm, "DELETE", resource_type, resource_path)
        for obj in formset.new_objects:
            object_event(request, "CREATE", obj)
        for obj, _fields in formset.changed_objects:
            object_event(request, "UPDATE", obj)

    def delete_model(self, request, obj):
        self.change_event(request, "DELETE", obj)
        super().delete_model(request, obj)

    def delete_queryset(self, request, queryset):
        for obj in queryset:
            self.change_event(request, "DELETE", obj)
        super().delete_queryset(request, queryset)


def adopt(obj, created):
    """Make the admin's unsaved form instance the row a service function created, so that the
    admin's logging and redirect that follow refer to it."""
    obj.pk = created.pk
    obj._state.adding = False
    obj.refresh_from_db()


def realm_owned_list_filter(*more):
    return (RealmFilter, *more)
