"""Form fields that stand for keys of a model's JSON field (the realm's ``smtpServer``, OTP and
WebAuthn policies, ``browserSecurityHeaders``): the console shows one validated control per key
instead of a JSON text area. Keys the form does not know are kept as stored."""
from django import forms

from .secrets import MASK


class Key:
    """``json_field[key]`` edited through ``field``. ``as_string`` stores Keycloak's string map
    values ("true", "587"); ``omit_empty`` drops the key when left empty (Keycloak omits it)."""

    def __init__(self, json_field, key, field, *, as_string=False, omit_empty=False):
        self.json_field, self.key, self.field = json_field, key, field
        self.as_string, self.omit_empty = as_string, omit_empty

    def from_json(self, value):
        if isinstance(self.field, forms.BooleanField):
            return value is True or str(value).lower() == "true"
        return value

    def to_json(self, value, stored):
        if isinstance(self.field, forms.BooleanField):
            return ("true" if value else "false") if self.as_string else bool(value)
        if value is None:
            return ""
        return str(value) if self.as_string and not isinstance(value, list) else value


class SecretKey(Key):
    """A stored secret: shown as Keycloak's mask; the mask posted back keeps the stored value."""

    def from_json(self, value):
        return MASK if value else ""

    def to_json(self, value, stored):
        return stored if value == MASK else value


class KeyedJsonForm(forms.ModelForm):
    json_keys = {}  # form field name -> Key

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name, spec in self.json_keys.items():
            stored = getattr(self.instance, spec.json_field) or {}
            if name in self.fields and spec.key in stored:
                self.initial[name] = spec.from_json(stored[spec.key])

    def _post_clean(self):
        super()._post_clean()
        groups = {}
        for name, spec in self.json_keys.items():
            if name not in self.cleaned_data:
                continue  # not on this page, or invalid (then nothing is saved)
            stored = getattr(self.instance, spec.json_field) or {}
            group = groups.setdefault(spec.json_field, dict(stored))
            value = spec.to_json(self.cleaned_data[name], stored.get(spec.key))
            if spec.omit_empty and value in ("", [], None):
                group.pop(spec.key, None)
            else:
                group[spec.key] = value
        for json_field, value in groups.items():
            setattr(self.instance, json_field, value)


def keyed_form(name, base, keys):
    """A subclass of ``base`` with one declared field per entry of ``keys`` ({name: Key})."""
    attrs = {field_name: spec.field for field_name, spec in keys.items()}
    attrs["json_keys"] = {**base.json_keys, **keys}
    attrs["__module__"] = base.__module__
    return type(base)(name, (base,), attrs)
