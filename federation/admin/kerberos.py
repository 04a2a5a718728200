"""Kerberos providers on the console (Keycloak's User federation > Kerberos page): the settings
``federation.kerberos`` honours, checked as the Admin API checks them."""
from django.contrib import admin

from realms.users.storage import InvalidConfig

from ..kerberos.config import EDIT_MODES, validate
from ..models import KerberosComponent
from .components import ComponentAdmin, ConfigForm, choice, config_form, fieldset, flag, number, refuse, text

SETTINGS = (
    ("enabled", flag(initial=True)),
    ("priority", number(initial=0, help_text="Lower first, when a realm has several providers.")),
    ("kerberosRealm", text(required=True, label="Kerberos realm", help_text="E.g. EXAMPLE.ORG.")),
    ("serverPrincipal", text(required=True, label="Server principal",
                             help_text="HTTP/host@REALM, or * for any key of the keytab.")),
    ("keyTab", text(required=True, label="KeyTab", help_text="Path of the server's keytab file.")),
    ("debug", flag(label="Debug", help_text="Log the Kerberos library's trace.")),
    ("allowPasswordAuthentication", flag(label="Allow password authentication",
                                         help_text="Check passwords typed on the sign-in form with the KDC.")),
    ("editMode", choice([(m, m) for m in EDIT_MODES], initial=EDIT_MODES[0], required=True, label="Edit mode",
                        help_text="READ_ONLY: passwords cannot be changed here; UNSYNCED: a password set here is "
                                  "kept and checked here.")),
    ("updateProfileFirstLogin", flag(label="Update first login",
                                     help_text="Ask a new user to review their profile at their first sign-in.")),
)


class KerberosForm(ConfigForm):
    provider_type, provider_id = KerberosComponent.USER_STORAGE, "kerberos"

    class Meta(ConfigForm.Meta):
        model = KerberosComponent

    def check(self, config):
        try:
            validate(config)
        except InvalidConfig as exc:
            refuse(exc)


@admin.register(KerberosComponent)
class KerberosComponentAdmin(ComponentAdmin):
    form = config_form(KerberosForm, "KerberosSettingsForm", SETTINGS)
    list_display = ("name", "kerberos_realm", "server_principal")
    fieldsets = (
        fieldset("Required settings", ("realm", "name", "kerberosRealm", "serverPrincipal", "keyTab", "debug",
                                       "allowPasswordAuthentication", "editMode", "updateProfileFirstLogin")),
        fieldset("Advanced settings", ("enabled", "priority")),
    )

    @admin.display(description="Kerberos realm")
    def kerberos_realm(self, obj):
        return obj.get("kerberosRealm")

    @admin.display(description="Server principal")
    def server_principal(self, obj):
        return obj.get("serverPrincipal")

    def save_model(self, request, obj, form, change):
        if not change:
            obj.parent_id = obj.realm_id
        super().save_model(request, obj, form, change)
