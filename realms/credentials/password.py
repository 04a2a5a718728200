"""The ``password`` credential: a Django-encoded hash in ``secret_data`` (new ones under the
realm's password policy, Argon2id by default; Keycloak's PBKDF2 and Argon2 hashes verified after
an import and upgraded on the next successful check; ``realms.credentials.hashers``,
``realms.credentials.password_policy``)."""
from django.contrib.auth import hashers as django_hashers

from . import CredentialType, password_policy
from .hashers import spend_check_time


class Password(CredentialType):
    type = "password"
    category = "basic-authentication"
    display_name = "password-display-name"
    help_text = "password-help-text"
    icon_css_class = "kcAuthenticatorPasswordClass"
    update_action = "UPDATE_PASSWORD"
    removeable = False

    def verify(self, user, secret):
        """Check against the stored hash; one the realm's policy would not make now (a Keycloak
        hash, another algorithm or other iterations) is replaced by a new one. A user without a
        password still costs one check (``hashers.spend_check_time``)."""
        cred = user.password_credential()
        if cred is None or not secret:
            spend_check_time(secret)
            return False
        valid = django_hashers.check_password(secret, cred.secret_data)
        if valid and password_policy.needs_rehash(user.realm, cred.secret_data):
            cred.secret_data = password_policy.hash_password(user.realm, secret)
            cred.save(update_fields=["secret_data"])
        return valid

    def create(self, user, secret):
        # The realm database's side of storage.set_password: under the realm's policy (raises
        # password_policy.PasswordPolicyError, storing nothing), hashed under it, the old hash
        # kept in the history.
        password_policy.validate(user, secret)
        password_policy.replace_password(user, password_policy.hash_password(user.realm, secret))
        user.forget_credentials()
