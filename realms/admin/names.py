"""Names and values as Keycloak's console shows them.

- ``resolved``: a name written ``${key}`` (the built-in clients' ``${client_account}``, roles'
  ``${role_offline-access}`` ...) is the realm's text for that key from the message bundle; other
  names are shown as written.
- ``required_action_names``: a required action by its display name ("Update Password"), not its id.
- ``when``: every time the console shows, in one format: the realm's locale's short date, then the
  time to the second and the server's time zone (decision 0065)."""
from django.contrib import admin
from django.utils import dateformat, formats, timezone

from ..http import messages
from ..models import RequiredActionProvider
from ..signin.flows import BUILTIN_REQUIRED_ACTIONS

_BUILTIN_ACTION_NAMES = {alias: name for alias, name, _enabled in BUILTIN_REQUIRED_ACTIONS}


def resolved(realm, name):
    """``name`` as the console shows it, in the realm's locale (``messages.display``)."""
    return messages.display(realm, messages.locale_for(None, realm), name)


def required_action_names(realm):
    """{alias: display name} of the required actions ``realm`` defines, Keycloak's built-in names
    for those it does not (a user may hold an action the realm no longer lists)."""
    stored = dict(RequiredActionProvider.objects.filter(realm=realm).values_list("alias", "name")) if realm else {}
    return {**_BUILTIN_ACTION_NAMES, **{alias: name for alias, name in stored.items() if name}}


def when(value, realm=None):
    """``value`` (an aware datetime, or None) as the console shows every time: "11/28/2026
    08:41:43 UTC" in English, "28.11.2026 08:41:43 UTC" in German."""
    if value is None:
        return "-"
    locale = messages.locale_for(None, realm)
    day = formats.get_format("SHORT_DATE_FORMAT", lang=locale, use_l10n=True)
    return dateformat.format(timezone.localtime(value), f"{day} H:i:s T")


def time_column(field, description, realm=lambda obj: obj.realm if obj.realm_id else None):
    """A model admin's column or read-only field showing the time ``field`` through ``when``
    (Django's own rendering of a date field is another format)."""
    @admin.display(description=description, ordering=field)
    def show(model_admin, obj):
        return when(getattr(obj, field), realm(obj))
    return show
