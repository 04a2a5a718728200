"""The direct-grant steps (Keycloak's ``direct-grant-validate-username`` and
``direct-grant-validate-password``): the password grant's user and password, checked by the one
sign-in service. A failure carries the ``invalid_grant`` description Keycloak answers."""
from ...models import Credential
from ...users import storage
from .. import passwords
from ..flows import INVALID_CREDENTIALS, Authenticator, Outcome


class ValidateUsername(Authenticator):
    provider_id = "direct-grant-validate-username"
    display_name = "Username Validation"

    def authenticate(self, ctx):
        user = passwords.find_user(ctx.realm, ctx.params.get("username", ""))
        if user is None:
            # As slow as a wrong password: the answer time must not tell which names exist.
            result = passwords.not_found(ctx.params.get("password", ""))
            return Outcome.failure(result.error, description=INVALID_CREDENTIALS)
        ctx.set_user(user)
        return Outcome.success()


class ValidatePassword(Authenticator):
    provider_id = "direct-grant-validate-password"
    display_name = "Password"
    reference_category = Credential.PASSWORD
    requires_user = True

    def authenticate(self, ctx):
        result = passwords.check_user_password(ctx.realm, ctx.user, ctx.params.get("password", ""),
                                            ip_address=ctx.ip_address)
        if result.ok:
            ctx.add_auth_method("pwd")
            return Outcome.success()
        # "Account disabled" only to a caller who knew the password: otherwise it would tell
        # anyone that the name exists.
        disabled = result.error == passwords.USER_DISABLED and result.password_valid
        return Outcome.failure(result.error, description="Account disabled" if disabled else INVALID_CREDENTIALS)

    def configured_for(self, ctx, user):
        return storage.is_configured_for(ctx.realm, user, Credential.PASSWORD)
