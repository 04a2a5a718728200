"""Credential types (Keycloak's CredentialProvider SPI): each type owns the data of its
``Credential`` rows (``secret_data``/``credential_data``, Keycloak's secretData/credentialData),
verifies a presented secret against them and creates new ones, the way Django's
``PASSWORD_HASHERS`` owns password hashes. Types register from an ``AppConfig.ready()``
(``password`` from realms; ``otp``, ``webauthn``, ``recovery-authn-codes`` from the apps that
add them)."""


class CredentialType:
    """One kind of credential, named by Keycloak's credential type."""

    type = ""

    def verify(self, user, secret) -> bool:
        """Whether ``secret`` matches one of the user's credentials of this type."""
        raise NotImplementedError

    def create(self, user, secret):
        """Store ``secret`` as the user's credential of this type (replacing the old one when a
        user holds only one)."""
        raise NotImplementedError

    def configured_for(self, user) -> bool:
        return user.credentials.filter(type=self.type).exists()


_types = {}


def register_credential_type(kind):
    instance = kind() if isinstance(kind, type) else kind
    _types[instance.type] = instance
    return kind


def get_credential_type(name):
    return _types.get(name)
