"""The ``password`` credential: a Django-encoded hash in ``secret_data`` (new ones under the
realm's password policy, Argon2id by default; Keycloak's PBKDF2 and Argon2 hashes verified after
an import and upgraded on the next successful check; ``realms.hashers``,
``realms.password_policy``)."""
from .. import password_policy
from . import CredentialType


class Password(CredentialType):
    type = "password"
    category = "basic-authentication"
    display_name = "password-display-name"
    help_text = "password-help-text"
    icon_css_class = "kcAuthenticatorPasswordClass"
    update_action = "UPDATE_PASSWORD"
    removeable = False

    def verify(self, user, secret):
        # User.check_password reads the credential row and upgrades an old hash; a user without
        # a password still costs one check (hashers.spend_check_time).
        return user.check_password(secret)

    def create(self, user, secret):
        # The realm database's side of storage.set_password: under the realm's policy (raises
        # password_policy.PasswordPolicyError, storing nothing), hashed under it, the old hash
        # kept in the history.
        password_policy.validate(user, secret)
        user.set_password(secret)
