"""LDAP providers in the console (Keycloak's User federation page): the connection, search and
sync settings of the current realm's providers, the bind credential write-only (kept when left
empty), and the actions "Test connection", "Test authentication", "Synchronize all users",
"Synchronize changed users", and the group and role mappers' "Sync LDAP groups to Keycloak" and
"Sync Keycloak groups to LDAP" (every such mapper of the chosen providers)."""
import ldap
from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db import transaction

from realms.admin import ConsoleAdmin
from realms.admin.audit import admin_event, owning_realm
from realms.models import Component
from realms.users.storage import open_config

from .ldap.api import add_default_mappers
from .ldap.config import CACHE_POLICIES, EDIT_MODES, MAPPER_TYPE, ConfigError, LdapConfig
from .ldap.connection import DirectoryError, DirectoryUnavailable, test_connection
from .ldap.membership import MembershipError
from .ldap.sync import DIRECTIONS, sync, sync_mapper
from .models import LdapComponent

_BOOL = {"required": False}
# Keycloak's config keys, in the order of its form: (key, field).
SETTINGS = (
    ("enabled", forms.BooleanField(initial=True, **_BOOL)),
    ("vendor", forms.ChoiceField(choices=[("ad", "Active Directory"), ("rhds", "Red Hat Directory Server"),
                                          ("tivoli", "Tivoli"), ("edirectory", "Novell eDirectory"),
                                          ("other", "Other")], initial="other")),
    ("connectionUrl", forms.CharField(help_text="ldap:// or ldaps:// URL(s), space separated.")),
    ("startTls", forms.BooleanField(**_BOOL)),
    ("connectionPooling", forms.BooleanField(**_BOOL)),
    ("connectionTimeout", forms.CharField(required=False, help_text="Milliseconds.")),
    ("readTimeout", forms.CharField(required=False, help_text="Milliseconds.")),
    ("authType", forms.ChoiceField(choices=[("simple", "simple"), ("none", "none")], initial="simple")),
    ("bindDn", forms.CharField(required=False)),
    ("bindCredential", forms.CharField(required=False, widget=forms.PasswordInput(render_value=False),
                                       help_text="Stored encrypted; leave empty to keep the current one.")),
    ("editMode", forms.ChoiceField(choices=[(m, m) for m in EDIT_MODES], initial="READ_ONLY")),
    ("usersDn", forms.CharField()),
    ("usernameLDAPAttribute", forms.CharField(initial="uid")),
    ("rdnLDAPAttribute", forms.CharField(initial="uid")),
    ("uuidLDAPAttribute", forms.CharField(initial="entryUUID")),
    ("userObjectClasses", forms.CharField(initial="inetOrgPerson, organizationalPerson")),
    ("customUserSearchFilter", forms.CharField(required=False)),
    ("searchScope", forms.ChoiceField(choices=[("1", "One Level"), ("2", "Subtree")], initial="1")),
    ("pagination", forms.BooleanField(initial=True, **_BOOL)),
    ("allowKerberosAuthentication", forms.BooleanField(**_BOOL)),
    ("kerberosRealm", forms.CharField(required=False)),
    ("serverPrincipal", forms.CharField(required=False, help_text="HTTP/host@REALM, or * for any key of the keytab.")),
    ("keyTab", forms.CharField(required=False, help_text="Path of the server's keytab file.")),
    ("krbPrincipalAttribute", forms.CharField(required=False, help_text="E.g. userPrincipalName; empty: the "
                                                                         "principal's name is the username.")),
    ("useKerberosForPasswordAuthentication", forms.BooleanField(**_BOOL)),
    ("importEnabled", forms.BooleanField(initial=True, **_BOOL)),
    ("syncRegistrations", forms.BooleanField(**_BOOL)),
    ("batchSizeForSync", forms.IntegerField(initial=1000, min_value=1)),
    ("fullSyncPeriod", forms.IntegerField(initial=-1, help_text="Seconds; -1: off.")),
    ("changedSyncPeriod", forms.IntegerField(initial=-1, help_text="Seconds; -1: off.")),
    ("cachePolicy", forms.ChoiceField(choices=[(p, p) for p in CACHE_POLICIES], initial="DEFAULT")),
    ("evictionDay", forms.ChoiceField(required=False, choices=[("", "")] + [(str(i), d) for i, d in enumerate(
        ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"), 1)],
        help_text="EVICT_WEEKLY.")),
    ("evictionHour", forms.IntegerField(required=False, min_value=0, max_value=23,
                                        help_text="EVICT_DAILY and EVICT_WEEKLY.")),
    ("evictionMinute", forms.IntegerField(required=False, min_value=0, max_value=59)),
    ("maxLifespan", forms.IntegerField(required=False, help_text="Milliseconds (MAX_LIFESPAN).")),
    ("trustEmail", forms.BooleanField(**_BOOL)),
    ("usePasswordModifyExtendedOp", forms.BooleanField(initial=True, **_BOOL)),
    ("validatePasswordPolicy", forms.BooleanField(**_BOOL, help_text="Check the realm's password policy too "
                                                                      "before the directory's.")),
    ("priority", forms.IntegerField(initial=0)),
)


def _as_config(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


class LdapForm(forms.ModelForm):
    class Meta:
        model = LdapComponent
        fields = ("realm", "name")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        stored = self.instance.config or {}
        for key, field in SETTINGS:
            self.fields[key] = field
            if key in stored and key != "bindCredential":
                value = stored[key][0] if stored[key] else ""
                self.initial[key] = value == "true" if isinstance(field, forms.BooleanField) else value

    def clean(self):
        cleaned = super().clean()
        config = dict(self.instance.config or {})
        for key, _ in SETTINGS:
            value = cleaned.get(key)
            if key == "bindCredential":
                if value:
                    config[key] = [value]
                continue
            if value in (None, "") and not self.fields[key].required:  # an optional setting left empty
                config.pop(key, None)
                continue
            config[key] = [_as_config(value)]
        probe = Component(provider_id="ldap", provider_type=Component.USER_STORAGE, config=config)
        try:
            LdapConfig.of(probe)
        except ConfigError as exc:
            raise ValidationError(str(exc)) from None
        self.instance.config = config
        self.instance.provider_id, self.instance.provider_type = "ldap", Component.USER_STORAGE
        return cleaned


def _event(request, operation, obj, path=""):
    admin_event(request, owning_realm(obj), operation, "COMPONENT", f"components/{obj.pk}{path}")


@admin.register(LdapComponent)
class LdapComponentAdmin(ConsoleAdmin):
    form = LdapForm
    list_display = ("name", "connection_url", "edit_mode", "import_enabled")
    actions = ("test_connection", "test_authentication", "sync_all_users", "sync_changed_users",
               "sync_groups_to_keycloak", "sync_groups_to_ldap")

    @admin.display(description="Connection URL")
    def connection_url(self, obj):
        return obj.get("connectionUrl")

    @admin.display(description="Edit mode")
    def edit_mode(self, obj):
        return obj.get("editMode")

    @admin.display(description="Import users", boolean=True)
    def import_enabled(self, obj):
        return obj.get("importEnabled", "true") == "true"

    def change_event(self, request, operation, obj):
        _event(request, operation, obj)

    def save_model(self, request, obj, form, change):
        with transaction.atomic():
            if not change:
                obj.parent_id = obj.realm_id
            super().save_model(request, obj, form, change)
            if not change:
                add_default_mappers(obj)

    def _test(self, request, queryset, action, label):
        for component in queryset:
            config = LdapConfig.of(component, open_config(component).get("bindCredential", [""])[0])
            try:
                test_connection(config, action)
            except DirectoryError as exc:
                self.message_user(request, f"{component.name}: {label} failed: {exc.info or exc}", messages.ERROR)
            else:
                self.message_user(request, f"{component.name}: {label} succeeded.", messages.SUCCESS)

    @admin.action(description="Test connection")
    def test_connection(self, request, queryset):
        self._test(request, queryset, "testConnection", "connection")

    @admin.action(description="Test authentication")
    def test_authentication(self, request, queryset):
        self._test(request, queryset, "testAuthentication", "authentication")

    def _sync(self, request, queryset, changed_only):
        for component in queryset:
            try:
                result = sync(component, changed_only=changed_only)
            except DirectoryUnavailable as exc:
                self.message_user(request, f"{component.name}: directory unavailable: {exc}", messages.ERROR)
                continue
            _event(request, "ACTION", component, "/sync")
            self.message_user(request, f"{component.name}: {result['status']}", messages.SUCCESS)

    @admin.action(description="Synchronize all users")
    def sync_all_users(self, request, queryset):
        self._sync(request, queryset, False)

    @admin.action(description="Synchronize changed users")
    def sync_changed_users(self, request, queryset):
        self._sync(request, queryset, True)

    def _sync_mappers(self, request, queryset, direction):
        for component in queryset:
            for mapper in Component.objects.filter(parent_id=component.pk, provider_type=MAPPER_TYPE,
                                                   provider_id__in=("group-ldap-mapper", "role-ldap-mapper")):
                try:
                    result = sync_mapper(component, mapper.pk, direction)
                except (MembershipError, DirectoryUnavailable, ldap.LDAPError) as exc:
                    self.message_user(request, f"{component.name} / {mapper.name}: {exc}", messages.ERROR)
                    continue
                _event(request, "ACTION", component, f"/mappers/{mapper.pk}/sync")
                self.message_user(request, f"{component.name} / {mapper.name}: {result['status']}", messages.SUCCESS)

    @admin.action(description="Sync LDAP groups and roles to Keycloak")
    def sync_groups_to_keycloak(self, request, queryset):
        self._sync_mappers(request, queryset, DIRECTIONS[0])

    @admin.action(description="Sync Keycloak groups and roles to LDAP")
    def sync_groups_to_ldap(self, request, queryset):
        self._sync_mappers(request, queryset, DIRECTIONS[1])
