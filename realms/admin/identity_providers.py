"""Identity providers, as Keycloak's console has them: a list (name, type, enabled, hidden on the
login page), "Add provider" by type, and each provider's page in two tabs, Settings (general,
the type's own sections, advanced) and Mappers (``identity_provider_mappers``).

Every change goes through ``realms.brokering.admin`` (create, update, delete with Keycloak's
checks, messages and admin events), the functions the Admin REST API calls, so that the console
and the API refuse the same things and record the same events. The client secret is write-only:
the page never shows it, and a form saved with the field empty keeps the stored one.

Discovery (OpenID Connect) and entity-descriptor (SAML) metadata are imported by the type's
``import_config`` from a URL fetched through ``realms.http.outbound``; the import button and its
URL field belong to the page's action form (decision 0062), so Enter in the object's fields saves
and never fetches anything."""
from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import path, reverse
from django.utils.html import format_html

from ..audit.admin_events import console_auth
from ..brokering import admin as idp_admin
from ..brokering.providers import ProviderType, get_provider_type, provider_types
from ..http import web
from ..models import AuthenticationFlow, IdentityProvider
from .base import ConsoleAdmin, realm_owned_list_filter
from .identity_provider_mappers import mappers_table
from .identity_provider_mappers import urls as mapper_urls
from .idp_fields import GUI_ORDER, IMPORT_LABEL, IMPORT_LABELS, SYNC_MODE, form_name, keys_of, ordered, sections
from .keyed import KeyedJsonForm, keyed_form
from .sessions import ACTION_FORM
from .switcher import current_realm

IMPORTED = "console_idp_import"  # the session key of metadata imported for the add page
GENERAL = ("alias", "display_name", form_name("guiOrder"), "enabled")
ADVANCED = ("store_token", "add_read_token_role_on_create", "trust_email", "link_only", "hide_on_login",
            "first_broker_login_flow_alias", "post_broker_login_flow_alias", form_name("syncMode"))
# Keycloak's messages that concern the alias: shown on its field.
ALIAS_MESSAGES = ("alias", "Empty Space", "Character '")


def importable(provider_type):
    """Whether the type reads metadata (its own ``import_config``, not the base's refusal)."""
    return type(provider_type).import_config is not ProviderType.import_config


class IdentityProviderForm(KeyedJsonForm):
    """The general and advanced settings (model fields and Keycloak's config keys); the type's
    own keys are added per type by ``IdentityProviderAdmin.get_form``. Valid only when
    ``realms.brokering.admin.check`` accepts the provider as it would be stored."""

    realm = provider_type = None  # set on the per-request subclass by IdentityProviderAdmin.get_form
    realm_base = ""  # the realm's issuer URL, for the redirect URI shown

    class Meta:
        model = IdentityProvider
        fields = ("alias", "display_name", "enabled", "store_token", "add_read_token_role_on_create", "trust_email",
                  "link_only", "hide_on_login", "first_broker_login_flow_alias", "post_broker_login_flow_alias")
        labels = {"display_name": "Display name", "store_token": "Store tokens",
                  "add_read_token_role_on_create": "Stored tokens readable", "trust_email": "Trust Email",
                  "link_only": "Account linking only", "hide_on_login": "Hide on login page"}
        help_texts = {
            "alias": "The alias uniquely identifies an identity provider and it is also used to build the "
                     "redirect uri.",
            "display_name": "Friendly name for Identity Providers.",
            "store_token": "Enable/disable if tokens must be stored after authenticating users.",
            "add_read_token_role_on_create": "Enable/disable if new users can read any stored tokens. This "
                                             "assigns the broker.read-token role.",
            "trust_email": "If enabled, email provided by this provider is not verified even if verification is "
                           "enabled for the realm.",
            "link_only": "If true, users cannot log in through this provider. They can only link to this "
                         "provider. This is useful if you don't want to allow login from the provider, but want "
                         "to integrate with a provider.",
            "hide_on_login": "If hidden, login with this provider is possible only if requested explicitly, for "
                             "example using the 'kc_idp_hint' parameter.",
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        flows = list(AuthenticationFlow.objects.filter(realm=self.realm, top_level=True,
                                                       provider_id=AuthenticationFlow.BASIC)
                     .order_by("alias").values_list("alias", flat=True)) if self.realm else []
        for name, label, empty, help_text in (
                ("first_broker_login_flow_alias", "First login flow override", "(the realm's first broker login)",
                 "Alias of authentication flow, which is triggered after first login with this identity provider."),
                ("post_broker_login_flow_alias", "Post login flow", "None",
                 "Alias of authentication flow, which is triggered after each login with this identity provider.")):
            if name not in self.fields:
                continue  # a page the admin may only view
            held = not self.instance._state.adding and getattr(self.instance, name)
            choices = [("", empty), *((f, f) for f in flows)]
            if held and held not in flows:
                choices.append((held, held))
            self.fields[name] = forms.ChoiceField(choices=choices, required=False, label=label, help_text=help_text)
        if self.instance._state.adding and self.provider_type is not None:
            self.instance.provider_id = self.provider_type.provider_id
        self.instance.realm_base = self.realm_base
        if not self.instance._state.adding and "alias" in self.fields:
            self.fields["alias"].disabled = True
            self.fields["alias"].help_text = "The alias cannot be changed."

    def _post_clean(self):
        super()._post_clean()  # the config keys into instance.config
        if self.errors:
            return
        idp = self.instance
        idp.realm = self.realm
        existing = None if idp._state.adding else IdentityProvider.objects.get(pk=idp.pk)
        try:
            idp_admin.check(self.realm, idp, existing)
        except idp_admin.Refused as exc:
            on_alias = any(word in exc.message for word in ALIAS_MESSAGES) and "alias" in self.fields
            self.add_error("alias" if on_alias and not self.fields["alias"].disabled else None, exc.message)


@admin.register(IdentityProvider)
class IdentityProviderAdmin(ConsoleAdmin):
    view_role, manage_role = "view-identity-providers", "manage-identity-providers"
    form = IdentityProviderForm
    list_display = ("alias", "display_name", "provider_type", "enabled", "hide_on_login")
    list_display_links = ("alias",)
    list_filter = realm_owned_list_filter()
    search_fields = ("alias", "display_name")
    actions = ["enable_providers", "disable_providers"]
    readonly_fields = ("redirect_uri", "provider_type", "import_metadata", "mappers_list")
    change_list_template = "admin/console/identity_providers/change_list.html"
    tabs = (("settings", "Settings"), ("mappers", "Mappers"))

    # -- the type of the page ------------------------------------------------------------------

    def types(self):
        return ordered(provider_types())

    def type_for(self, request, obj=None):
        if obj is not None and not obj._state.adding:
            return get_provider_type(obj.provider_id)
        chosen = get_provider_type(request.GET.get("provider_id", ""))
        if chosen is not None:
            return chosen
        types = self.types()
        return types[0] if types else None

    def has_add_permission(self, request):
        return bool(provider_types()) and super().has_add_permission(request)

    def changelist_view(self, request, extra_context=None):
        add = reverse("admin:realms_identityprovider_add")
        offered = [(t.name or t.provider_id, f"{add}?provider_id={t.provider_id}", t.social) for t in self.types()]
        extra_context = {"provider_types": offered, **(extra_context or {})}
        return super().changelist_view(request, extra_context)

    # -- the form --------------------------------------------------------------------------------

    def get_form(self, request, obj=None, change=False, **kwargs):
        provider_type = self.type_for(request, obj)
        adding = obj is None
        keys = keys_of((GUI_ORDER, SYNC_MODE), adding=adding)
        for _title, settings in (sections(provider_type) if provider_type else ()):
            keys.update(keys_of(settings, adding=adding))
        base = keyed_form("IdentityProviderForm", IdentityProviderForm, keys)
        base.realm = obj.realm if obj is not None else current_realm(request)
        base.provider_type = provider_type
        base.realm_base = web.realm_url(request, base.realm.name) if base.realm else ""
        return super().get_form(request, obj, change=change, form=base, **kwargs)

    def get_fieldsets(self, request, obj=None):
        provider_type = self.type_for(request, obj)
        general = ("provider_type",) + (("redirect_uri",) if obj is not None else ()) + GENERAL
        if obj is None and provider_type is not None and importable(provider_type):
            general = ("import_metadata",) + general
        fieldsets = [("General settings", {"classes": ("tab-settings",), "fields": general})]
        for title, settings in (sections(provider_type) if provider_type else ()):
            # Keycloak's type-specific "Advanced" is a section folded until opened.
            classes = ("tab-settings", "collapse") if title == "Advanced" else ("tab-settings",)
            fieldsets.append((title, {"classes": classes, "fields": tuple(form_name(s.key) for s in settings)}))
        fieldsets.append(("Advanced settings", {"classes": ("tab-settings",), "fields": ADVANCED}))
        if obj is not None:
            fieldsets.append(("Mappers", {"classes": ("tab-mappers",), "fields": ("mappers_list",)}))
        return fieldsets

    def get_changeform_initial_data(self, request):
        initial = super().get_changeform_initial_data(request)
        imported = request.session.get(IMPORTED)
        provider_type = self.type_for(request)
        if imported and provider_type is not None and imported.get("provider_id") == provider_type.provider_id:
            del request.session[IMPORTED]
            kinds = {s.key: s.kind for _t, settings in sections(provider_type) for s in settings}
            for key, value in (imported.get("config") or {}).items():
                if key in kinds and kinds[key] != "secret":
                    initial[form_name(key)] = value == "true" if kinds[key] == "bool" else value
        return initial

    def get_object(self, request, object_id, from_field=None):
        """The provider, its config keys also readable as ``config_<key>``: what a page the admin
        may only view shows (as read-only fields) in place of the form's fields. A secret reads
        as whether one is stored, never itself."""
        obj = super().get_object(request, object_id, from_field)
        if obj is not None:
            for key, value in (obj.config or {}).items():
                shown = ("(stored)" if value else "") if key in idp_admin.SECRET_KEYS else value
                setattr(obj, form_name(key), shown)
        return obj

    def add_view(self, request, form_url="", extra_context=None):
        provider_type = self.type_for(request)
        if provider_type is not None:
            form_url = form_url or f"?provider_id={provider_type.provider_id}"
        return super().add_view(request, form_url, extra_context)

    @admin.display(description="Provider")
    def provider_type(self, obj):
        provider_type = get_provider_type(obj.provider_id) if obj.provider_id else None
        if provider_type is None:
            return f"{obj.provider_id} (not available on this server)"
        return provider_type.name or provider_type.provider_id

    @admin.display(description="Redirect URI")
    def redirect_uri(self, obj):
        base = getattr(obj, "realm_base", "") or f"/realms/{obj.realm.name}"
        return f"{base}/broker/{obj.alias}/endpoint"

    @admin.display(description="Import metadata")
    def import_metadata(self, obj):
        provider_type = get_provider_type(obj.provider_id) if obj.provider_id else None
        if provider_type is None:
            return "-"
        label = IMPORT_LABELS.get(provider_type.provider_id, IMPORT_LABEL)
        url = reverse("admin:realms_identityprovider_import") + f"?provider_id={provider_type.provider_id}"
        return format_html(
            '<label for="idp-from-url">{}</label> <input type="url" id="idp-from-url" name="fromUrl" form="{}" '
            'size="50" style="max-width:100%" placeholder="https://"> <button type="submit" class="button" form="{}" '
            'formaction="{}">Import</button><div class="help">Reads the provider\'s settings from its metadata '
            "and fills them in below.</div>", label, ACTION_FORM, ACTION_FORM, url)

    @admin.display(description="Mappers")
    def mappers_list(self, obj):
        return mappers_table(obj)

    # -- saving through realms.brokering.admin ---------------------------------------------------

    def save_model(self, request, obj, form, change):
        realm = form.realm
        if change:
            existing = IdentityProvider.objects.get(pk=obj.pk)
            idp_admin.update(realm, obj, existing, auth=console_auth(request))
        else:
            idp_admin.create(realm, obj, auth=console_auth(request))

    def change_event(self, request, operation, obj):
        pass  # realms.brokering.admin records each change's event

    def delete_model(self, request, obj):
        idp_admin.delete(obj.realm, obj, auth=console_auth(request))

    def delete_queryset(self, request, queryset):
        for idp in queryset:
            self.delete_model(request, idp)

    def _set_enabled(self, request, queryset, enabled):
        changed = 0
        for idp in queryset:
            if idp.enabled == enabled:
                continue
            existing = IdentityProvider.objects.get(pk=idp.pk)
            idp.enabled = enabled
            try:
                idp_admin.update(idp.realm, idp, existing, auth=console_auth(request))
            except idp_admin.Refused as exc:
                self.message_user(request, f"{idp.alias}: {exc.message}", messages.ERROR)
                continue
            changed += 1
        word = "Enabled" if enabled else "Disabled"
        self.message_user(request, f"{word} {changed} identity provider(s).", messages.SUCCESS)

    @admin.action(description="Enable selected identity providers", permissions=["change"])
    def enable_providers(self, request, queryset):
        self._set_enabled(request, queryset, True)

    @admin.action(description="Disable selected identity providers", permissions=["change"])
    def disable_providers(self, request, queryset):
        self._set_enabled(request, queryset, False)

    # -- metadata import and the mappers' pages ----------------------------------------------------

    def get_urls(self):
        view = self.admin_site.admin_view
        return [path("import/", view(self.import_view), name="realms_identityprovider_import"),
                *mapper_urls(self), *super().get_urls()]

    def import_view(self, request):
        """Keycloak's ``import-config`` from a URL, for the add page: the type reads the fetched
        metadata; what it found fills the add page's fields (kept in the session for that page)."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if not self.has_add_permission(request):
            raise PermissionDenied
        provider_type = self.type_for(request)
        back = reverse("admin:realms_identityprovider_add") + f"?provider_id={provider_type.provider_id}"
        url = request.POST.get("fromUrl", "").strip()
        if not url:
            self.message_user(request, "Give the metadata's URL to import it.", messages.ERROR)
            return HttpResponseRedirect(back)
        try:
            config = idp_admin.import_config(provider_type, url=url)
        except idp_admin.Refused as exc:
            self.message_user(request, exc.message, messages.ERROR)
            return HttpResponseRedirect(back)
        request.session[IMPORTED] = {"provider_id": provider_type.provider_id,
                                     "config": {k: str(v) for k, v in config.items() if k != "clientSecret"}}
        self.message_user(request, "The provider's metadata was imported: check the settings and save.",
                          messages.SUCCESS)
        return HttpResponseRedirect(back)
