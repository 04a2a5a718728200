"""What the federation pages share: a component's multivalued config (Keycloak's names, a list of
strings each) edited as typed form fields, secrets write-only, refusals as English text, and the
admin events of a component."""
from django import forms
from django.core.exceptions import ValidationError

from realms.admin import ConsoleAdmin
from realms.admin.audit import admin_event, owning_realm
from realms.http import messages


def english(error):
    """The console's text of a refusal whose message is Keycloak's message key where Keycloak has
    one (``ldapErrorEditModeMandatory``), else already English."""
    return messages.text(None, messages.FALLBACK_LOCALE, str(error))


def flag(**kwargs):
    return forms.BooleanField(required=False, **kwargs)


def text(**kwargs):
    return forms.CharField(required=kwargs.pop("required", False), **kwargs)


def choice(choices, **kwargs):
    return forms.ChoiceField(required=kwargs.pop("required", False), choices=choices, **kwargs)


def number(**kwargs):
    return forms.IntegerField(required=kwargs.pop("required", False), **kwargs)


def _as_config(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


class ConfigForm(forms.ModelForm):
    """A component's form: ``settings`` are (config key, form field) pairs, shown as fields named by
    the key and stored as ``[value]``; keys the form does not show (a Keycloak setting this server
    does not honour, kept from an import) stay as they were. ``secrets`` are write-only: never
    shown, kept when left empty. ``check(config)`` refuses what cannot work (raise ValidationError)."""

    settings = ()
    secrets = ()
    provider_type = provider_id = ""

    class Meta:
        fields = ("realm", "name")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        stored = self.instance.config or {}
        for key, field in self.fields.items():
            if key in self.secrets:
                field.help_text = ("A value is set; leave empty to keep it, type a new one to replace it."
                                   if stored.get(key) else "Not set.")
            elif key in stored and key in dict(self.settings):
                value = stored[key][0] if stored[key] else ""
                self.initial[key] = value.lower() == "true" if isinstance(field, forms.BooleanField) else value

    def clean(self):
        cleaned = super().clean()
        if self.errors:
            return cleaned
        config = dict(self.instance.config or {})
        for key, field in self.settings:
            value = cleaned.get(key)
            if key in self.secrets:
                if value:
                    config[key] = [value]
            elif value in (None, "") and not field.required:  # an optional setting left empty
                config.pop(key, None)
            else:
                config[key] = [_as_config(value)]
        self.check(config)
        self.instance.config = config
        self.instance.provider_type = self.provider_type
        self.instance.provider_id = self.instance.provider_id or self.provider_id
        return cleaned

    def check(self, config):
        pass


def config_form(base, name, settings, **attrs):
    """A ConfigForm class whose fields are ``settings`` (declared, so the page's fieldsets show them)."""
    return type(name, (base,), {**{key: field for key, field in settings}, "settings": tuple(settings), **attrs})


def refuse(error):
    raise ValidationError(english(error)) from None


class ComponentAdmin(ConsoleAdmin):
    """A realm's components: recorded as Keycloak's COMPONENT admin events."""

    def change_event(self, request, operation, obj):
        component_event(request, operation, obj)


def component_event(request, operation, obj, path=""):
    admin_event(request, owning_realm(obj), operation, "COMPONENT", f"components/{obj.pk}{path}")


def fieldset(title, keys, tab="settings", description=""):
    options = {"fields": list(keys), "classes": (f"tab-{tab}",)}
    if description:
        options["description"] = description
    return (title, options)

