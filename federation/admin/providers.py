"""LDAP providers on the console (Keycloak's User federation > LDAP page): every setting this
server honours, grouped as Keycloak's form groups them (a Keycloak setting it does not honour is
not offered), the bind credential write-only, the mappers listed with links to edit and add them,
and the actions "Test connection", "Test authentication", "Synchronize changed users" and
"Synchronize all users" as forms of their own after the settings form (Enter in a field saves).
The tests use the saved settings; a synchronization runs in the background (``federation.tasks``)
and the page shows its status, current on each load."""
from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import Http404, HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from realms.admin.names import when
from realms.users.storage import open_config

from ..ldap.api import add_default_mappers
from ..ldap.config import CACHE_POLICIES, EDIT_MODES, ConfigError, LdapConfig
from ..ldap.connection import DirectoryError, test_connection
from ..ldap.mappers import MAPPERS
from ..ldap.sync import result_rep
from ..models import LdapComponent, LdapMapper, SyncStatus
from ..tasks import SyncUnderWay, start_sync
from .components import (
    ComponentAdmin,
    ConfigForm,
    choice,
    component_event,
    config_form,
    english,
    fieldset,
    flag,
    number,
    refuse,
    text,
)

_DAYS = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
# Keycloak's config keys with their fields, in the order of its form.
SETTINGS = (
    ("enabled", flag(initial=True)),
    ("vendor", choice([("ad", "Active Directory"), ("rhds", "Red Hat Directory Server"), ("tivoli", "Tivoli"),
                       ("edirectory", "Novell eDirectory"), ("other", "Other")], initial="other", required=True)),
    ("priority", number(initial=0, help_text="Lower first, when a realm has several providers.")),
    ("connectionUrl", text(required=True, label="Connection URL", help_text="ldap:// or ldaps:// URL(s), space "
                                                                            "separated.")),
    ("startTls", flag(label="Enable StartTLS")),
    ("connectionPooling", flag(label="Connection pooling")),
    ("connectionTimeout", text(label="Connection timeout", help_text="Milliseconds.")),
    ("authType", choice([("simple", "simple"), ("none", "none")], initial="simple", required=True,
                        label="Bind type")),
    ("bindDn", text(label="Bind DN")),
    ("bindCredential", text(label="Bind credentials", widget=forms.PasswordInput())),
    ("editMode", choice([("", "Select one")] + [(m, m) for m in EDIT_MODES], label="Edit mode")),
    ("usersDn", text(required=True, label="Users DN")),
    ("usernameLDAPAttribute", text(required=True, initial="uid", label="Username LDAP attribute")),
    ("rdnLDAPAttribute", text(required=True, initial="uid", label="RDN LDAP attribute")),
    ("uuidLDAPAttribute", text(required=True, initial="entryUUID", label="UUID LDAP attribute")),
    ("userObjectClasses", text(required=True, initial="inetOrgPerson, organizationalPerson",
                               label="User object classes", help_text="Comma separated.")),
    ("customUserSearchFilter", text(label="User LDAP filter", help_text="Starts with ( and ends with ).")),
    ("searchScope", choice([("1", "One Level"), ("2", "Subtree")], initial="1", required=True,
                           label="Search scope")),
    ("readTimeout", text(label="Read timeout", help_text="Milliseconds.")),
    ("pagination", flag(initial=True)),
    ("importEnabled", flag(initial=True, label="Import users")),
    ("syncRegistrations", flag(label="Sync registrations")),
    ("batchSizeForSync", number(initial=1000, min_value=1, required=True, label="Batch size")),
    ("fullSyncPeriod", number(initial=-1, required=True, label="Periodic full sync",
                              help_text="Seconds between full synchronizations; -1: off.")),
    ("changedSyncPeriod", number(initial=-1, required=True, label="Periodic changed users sync",
                                 help_text="Seconds between synchronizations of changed users; -1: off.")),
    ("allowKerberosAuthentication", flag(label="Allow Kerberos authentication")),
    ("kerberosRealm", text(label="Kerberos realm")),
    ("serverPrincipal", text(label="Server principal", help_text="HTTP/host@REALM, or * for any key of the keytab.")),
    ("keyTab", text(label="KeyTab", help_text="Path of the server's keytab file.")),
    ("krbPrincipalAttribute", text(label="Kerberos principal attribute", help_text="E.g. userPrincipalName; "
                                   "empty: the principal's name is the username.")),
    ("debug", flag(label="Kerberos debug")),
    ("useKerberosForPasswordAuthentication", flag(label="Use Kerberos for password authentication")),
    ("cachePolicy", choice([(p, p) for p in CACHE_POLICIES], initial="DEFAULT", required=True,
                           label="Cache policy")),
    ("evictionDay", choice([("", "")] + [(str(i), d) for i, d in enumerate(_DAYS, 1)], label="Eviction day",
                           help_text="EVICT_WEEKLY.")),
    ("evictionHour", number(min_value=0, max_value=23, label="Eviction hour", help_text="EVICT_DAILY and "
                                                                                       "EVICT_WEEKLY.")),
    ("evictionMinute", number(min_value=0, max_value=59, label="Eviction minute")),
    ("maxLifespan", number(min_value=0, label="Max lifespan", help_text="Milliseconds (MAX_LIFESPAN).")),
    ("usePasswordModifyExtendedOp", flag(initial=True, label="Use the LDAPv3 password modify extended operation")),
    ("validatePasswordPolicy", flag(label="Validate password policy", help_text="Check the realm's password "
                                                                                "policy too before the directory's.")),
    ("trustEmail", flag(label="Trust email")),
)


class LdapForm(ConfigForm):
    secrets = ("bindCredential",)
    provider_type, provider_id = LdapComponent.USER_STORAGE, "ldap"

    class Meta(ConfigForm.Meta):
        model = LdapComponent

    def check(self, config):
        probe = LdapComponent(provider_id="ldap", provider_type=LdapComponent.USER_STORAGE, config=config)
        try:
            LdapConfig.of(probe)
        except ConfigError as exc:
            refuse(exc)


LdapSettingsForm = config_form(LdapForm, "LdapSettingsForm", SETTINGS)

# The page's actions: URL name -> (label, what it does).
ACTIONS = {"test-connection": "Test connection", "test-authentication": "Test authentication",
           "sync-changed": "Synchronize changed users", "sync-all": "Synchronize all users"}


def sync_status_text(status, realm):
    """What a person reads of a provider's last synchronization (times as the console shows every time)."""
    if status is None:
        return "Not synchronized yet."
    what = "Changed users" if status.changed_only else "All users"

    def at(value):
        return when(value, realm)

    if status.state == SyncStatus.QUEUED:
        return f"{what}: queued at {at(status.requested)}, waiting to start."
    if status.state == SyncStatus.RUNNING:
        return f"{what}: running since {at(status.started)}."
    if status.state == SyncStatus.FAILED:
        return f"{what}: failed at {at(status.finished)}. {status.error}"
    if status.ignored:
        return (f"{what}: nothing done at {at(status.finished)}: Import users is off, or another synchronization "
                f"of this provider was under way.")
    counts = result_rep(added=status.added, updated=status.updated, removed=status.removed, failed=status.failed)
    return f"{what}: done at {at(status.finished)}: {counts['status']}."


@admin.register(LdapComponent)
class LdapComponentAdmin(ComponentAdmin):
    form = LdapSettingsForm
    change_form_template = "admin/federation/change_form.html"
    list_display = ("name", "connection_url", "edit_mode", "import_enabled")
    tabs = (("settings", "Settings"), ("mappers", "Mappers"))
    fieldsets = (
        fieldset("General options", ("realm", "name", "vendor", "enabled", "priority")),
        fieldset("Connection and authentication settings", ("connectionUrl", "startTls", "connectionPooling",
                                                            "connectionTimeout", "authType", "bindDn",
                                                            "bindCredential")),
        fieldset("LDAP searching and updating", ("editMode", "usersDn", "usernameLDAPAttribute", "rdnLDAPAttribute",
                                                 "uuidLDAPAttribute", "userObjectClasses", "customUserSearchFilter",
                                                 "searchScope", "readTimeout", "pagination")),
        fieldset("Synchronization settings", ("sync_status", "importEnabled", "syncRegistrations", "batchSizeForSync",
                                              "fullSyncPeriod", "changedSyncPeriod")),
        fieldset("Kerberos integration", ("allowKerberosAuthentication", "kerberosRealm", "serverPrincipal", "keyTab",
                                          "krbPrincipalAttribute", "debug", "useKerberosForPasswordAuthentication")),
        fieldset("Cache settings", ("cachePolicy", "evictionDay", "evictionHour", "evictionMinute", "maxLifespan")),
        fieldset("Advanced settings", ("usePasswordModifyExtendedOp", "validatePasswordPolicy", "trustEmail")),
        fieldset("Mappers", ("mapper_list",), tab="mappers"),
    )
    readonly_fields = ("sync_status", "mapper_list")

    @admin.display(description="Connection URL")
    def connection_url(self, obj):
        return obj.get("connectionUrl")

    @admin.display(description="Edit mode")
    def edit_mode(self, obj):
        return obj.get("editMode")

    @admin.display(description="Import users", boolean=True)
    def import_enabled(self, obj):
        return obj.get("importEnabled", "true") == "true"

    @admin.display(description="Last synchronization")
    def sync_status(self, obj):
        if obj is None or obj._state.adding:
            return "Not synchronized yet."
        status = SyncStatus.objects.filter(component_id=obj.pk).first()
        return format_html('<span id="sync-status" data-state="{}">{}</span>', status.state if status else "none",
                           sync_status_text(status, obj.realm))

    @admin.display(description="Mappers")
    def mapper_list(self, obj):
        if obj is None or obj._state.adding:
            return "Save the provider to add mappers; it gets Keycloak's default mappers."
        rows = format_html_join("", '<tr><td><a href="{}">{}</a></td><td>{}</td></tr>', (
            (reverse("admin:federation_ldapmapper_change", args=[m.pk]), m.name, m.provider_id)
            for m in LdapMapper.objects.filter(parent_id=obj.pk).order_by("name")))
        add = reverse("admin:federation_ldapmapper_add")
        links = format_html_join(" ", '<a class="button" href="{}?parent={}&amp;provider_id={}">{}</a>',
                                 ((add, obj.pk, kind, kind) for kind in MAPPERS))
        return format_html('<table class="console-table" id="mapper-list"><thead><tr><th>Name</th><th>Type</th></tr>'
                           '</thead><tbody>{}</tbody></table><p>Add a mapper:</p><div class="console-actions">{}</div>',
                           rows, links)

    def save_model(self, request, obj, form, change):
        with transaction.atomic():
            if not change:
                obj.parent_id = obj.realm_id
            super().save_model(request, obj, form, change)
            if not change:
                add_default_mappers(obj)

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        if obj is not None and self.has_change_permission(request, obj):
            context["component_actions"] = [(reverse("admin:federation_ldapcomponent_action", args=[obj.pk, name]), label)
                                       for name, label in ACTIONS.items()]
        return super().render_change_form(request, context, add, change, form_url, obj)

    def get_urls(self):
        return [path("<path:object_id>/action/<slug:action>/", self.admin_site.admin_view(self.action_view),
                     name="federation_ldapcomponent_action"), *super().get_urls()]

    def action_view(self, request, object_id, action):
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        component = self.get_object(request, object_id)
        if component is None or action not in ACTIONS:
            raise Http404("No such LDAP provider or action.")
        if not self.has_change_permission(request, component):
            raise PermissionDenied
        if action.startswith("test-"):
            self._test(request, component, action)
        else:
            try:
                with transaction.atomic():
                    start_sync(component, changed_only=action == "sync-changed")
                    component_event(request, "ACTION", component, "/sync")
            except SyncUnderWay:
                self.message_user(request, "A synchronization of this provider is already under way; its status "
                                           "is shown below.", messages.WARNING)
            else:
                self.message_user(request, f"{ACTIONS[action]}: started. The status below shows when it is done; "
                                           f"reload the page to see it change.", messages.SUCCESS)
        return HttpResponseRedirect(reverse("admin:federation_ldapcomponent_change", args=[component.pk]))

    def _test(self, request, component, action):
        authentication = action == "test-authentication"
        try:
            config = LdapConfig.of(component, open_config(component).get("bindCredential", [""])[0])
            test_connection(config, "testAuthentication" if authentication else "testConnection")
        except ConfigError as exc:
            self.message_user(request, f"The saved settings cannot work: {english(exc)}", messages.ERROR)
        except DirectoryError as exc:
            doing = "authenticate to" if authentication else "connect to"
            self.message_user(request, f"Error when trying to {doing} LDAP: {exc.info or exc}", messages.ERROR)
        else:
            self.message_user(request, f"Successfully authenticated to LDAP as {config.bind_dn or 'anonymous'}."
                              if authentication else "Successfully connected to LDAP.", messages.SUCCESS)

