"""Credential types (Keycloak's CredentialProvider SPI): each type owns the data of its
``Credential`` rows (``secret_data``/``credential_data``, Keycloak's secretData/credentialData),
verifies a presented secret against them and creates new ones, the way Django's
``PASSWORD_HASHERS`` owns password hashes. Types register from an ``AppConfig.ready()``
(``password``, ``otp``, ``recovery-authn-codes``, ``webauthn`` and ``webauthn-passwordless``
from realms)."""
from ..registry import Registry


class CredentialType:
    """One kind of credential, named by Keycloak's credential type."""

    type = ""
    # What the account console shows (Keycloak's CredentialTypeMetadata): the category orders
    # the types (basic-authentication, two-factor, passwordless), the texts are message keys,
    # the actions are required actions that set up a new credential or replace the one held.
    category = ""
    display_name = ""
    help_text = ""
    icon_css_class = ""
    create_action = None
    update_action = None
    removeable = True

    def verify(self, user, secret) -> bool:
        """Whether ``secret`` matches one of the user's credentials of this type."""
        raise NotImplementedError

    def create(self, user, secret):
        """Store ``secret`` as the user's credential of this type (replacing the old one when a
        user holds only one)."""
        raise NotImplementedError

    def configured_for(self, user) -> bool:
        return any(c.type == self.type for c in user.stored_credentials())

    def secret_from_representation(self, secret_data: str) -> str:
        """What ``secret_data`` keeps of Keycloak's secretData string (ValueError when it is not
        this type's shape); ``secret_to_representation`` gives the string back unchanged."""
        return secret_data

    def secret_to_representation(self, stored: str) -> str:
        return stored


_types = Registry("credential types")


def register_credential_type(kind):
    return _types.add_instance(kind, "type")


def get_credential_type(name):
    return _types.get(name)


def credential_type_names():
    return sorted(_types)


def secret_from_representation(type_name, secret_data):
    """A realm file's secretData as stored (types without a registered kind keep it as is)."""
    kind = get_credential_type(type_name)
    return kind.secret_from_representation(secret_data) if kind is not None else secret_data


def secret_to_representation(credential):
    kind = get_credential_type(credential.type)
    return kind.secret_to_representation(credential.secret_data) if kind is not None else credential.secret_data


def credential_types():
    """Every registered type, in registration order."""
    return list(_types.values())
