"""Attributes (a user's, group's, role's, client's ...) edited as rows of key and value, as
Keycloak's console has them, instead of a JSON text area. A multi-valued attribute is its key
repeated on several rows."""
from django import forms
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe

from ..models import Client, ClientScope, Realm

# Keycloak keeps these as Map<String, String>: one value a key. The others (users, groups, roles,
# organizations) as Map<String, List<String>>.
SINGLE_VALUED = (Client, ClientScope, Realm)
KEY_LENGTH = 255


class RowsWidget(forms.Widget):
    """A widget whose template is the project's (``templates/``), which Django's default form
    renderer does not search."""

    def render(self, name, value, attrs=None, renderer=None):
        return mark_safe(render_to_string(self.template_name, self.get_context(name, value, attrs)))


class AttributesWidget(RowsWidget):
    """Posts ``<name>-key`` and ``<name>-value`` once a row. The buttons that add and remove rows
    are ``type="button"``: Enter in any input saves the form (the browser's default button)."""

    template_name = "admin/console/widgets/attributes.html"

    def get_context(self, name, value, attrs):
        context = super().get_context(name, value, attrs)
        # One empty row beyond those stored: without JavaScript a person can still add one a save.
        context["widget"]["rows"] = [*(value or ()), ("", "")]
        return context

    def value_from_datadict(self, data, files, name):
        if f"{name}-present" not in data:
            return None  # not on the page posted
        return list(zip(data.getlist(f"{name}-key"), data.getlist(f"{name}-value"), strict=False))

    def value_omitted_from_data(self, data, files, name):
        return f"{name}-present" not in data


class AttributesField(forms.Field):
    widget = AttributesWidget

    def __init__(self, *, multivalued=True, **kwargs):
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)
        self.multivalued = multivalued

    def prepare_value(self, value):
        """Stored attributes ({key: [values]} or {key: value}) as (key, value) rows."""
        if not isinstance(value, dict):
            return value or []
        return [(key, "" if v is None else str(v)) for key, values in value.items()
                for v in (values if isinstance(values, list) else [values])]

    def to_python(self, value):
        if isinstance(value, dict):
            return value
        attributes = {}
        for number, (key, text) in enumerate(value or (), 1):
            key = key.strip()
            if not key:
                if text.strip():
                    raise forms.ValidationError(f"Row {number}: give the attribute a key, or empty the row.")
                continue
            if len(key) > KEY_LENGTH:
                raise forms.ValidationError(f"Row {number}: a key has at most {KEY_LENGTH} characters.")
            if self.multivalued:
                attributes.setdefault(key, []).append(text)
            elif key in attributes:
                raise forms.ValidationError(f"Row {number}: the key {key} is given twice; it takes one value.")
            else:
                attributes[key] = text
        return attributes

    def has_changed(self, initial, data):
        try:
            return self.to_python(self.prepare_value(initial)) != self.to_python(data)
        except forms.ValidationError:
            return True


def attributes_field(model, **kwargs):
    return AttributesField(multivalued=not issubclass(model, SINGLE_VALUED), **kwargs)
