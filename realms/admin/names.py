"""Display names as Keycloak's console shows them: a name written ``${key}`` (the built-in
clients' ``${client_account}``, roles' ``${role_offline-access}`` ...) is the realm's text for
that key from the message bundle; other names are shown as written."""
from ..http import messages


def resolved(realm, name):
    if name and name.startswith("${") and name.endswith("}"):
        return messages.text(realm, messages.locale_for(None, realm), name[2:-1])
    return name
