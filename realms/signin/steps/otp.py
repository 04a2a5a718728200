"""The second-factor steps: Keycloak's ``auth-otp-form`` (browser), ``direct-grant-validate-otp``
(the password grant's ``totp`` parameter) and ``auth-recovery-authn-code-form``. Each wrong code
is a failed sign-in for brute-force detection (``passwords.check_credential``)."""
from ...credentials import get_credential_type, recovery_codes
from ...http.messages import Message
from ...models import Credential
from .. import passwords
from ..flows import INVALID_CREDENTIALS, Authenticator, Outcome

CONFIGURE_TOTP = "CONFIGURE_TOTP"
CONFIGURE_RECOVERY_AUTHN_CODES = "CONFIGURE_RECOVERY_AUTHN_CODES"
# Keycloak's messages (invalidTotpMessage, recovery-codes-error-invalid).
INVALID_TOTP = Message("invalidTotpMessage")
INVALID_RECOVERY_CODE = Message("recovery-codes-error-invalid")


def _require_enrolment(ctx, action):
    """A REQUIRED second-factor step the user has not set up: Keycloak has them set it up as a
    required action (never skipped: the action verifies a first code or shows the codes)."""
    user = ctx.user
    if action not in (user.required_actions or []):
        user.required_actions = [*(user.required_actions or []), action]
        user.save(update_fields=["required_actions"])
    return Outcome.success()


class OtpForm(Authenticator):
    provider_id = "auth-otp-form"
    display_name = "OTP Form"
    reference_category = Credential.OTP
    requires_user = True

    def page(self, ctx, *, error=""):
        return ctx.render("login-otp.html", {"error": error, "try_another_way": ctx.other_alternatives})

    def authenticate(self, ctx):
        if not self.configured_for(ctx, ctx.user):
            return _require_enrolment(ctx, CONFIGURE_TOTP)
        return Outcome.challenge(self.page(ctx))

    def action(self, ctx):
        if ctx.params.get("tryAnotherWay") and ctx.other_alternatives:
            return Outcome.attempted()  # the flow moves on to the next alternative step
        result = passwords.check_credential(ctx.realm, ctx.user, Credential.OTP, ctx.params.get("otp", ""),
                                         ip_address=ctx.ip_address)
        if not result.ok:
            ctx.login_error(result.error, user=ctx.user)
            return Outcome.failure(result.error, self.page(ctx, error=INVALID_TOTP))
        ctx.add_auth_method("otp")
        return Outcome.success()

    def configured_for(self, ctx, user):
        return get_credential_type(Credential.OTP).configured_for(user)


class ValidateOtp(Authenticator):
    provider_id = "direct-grant-validate-otp"
    display_name = "OTP"
    reference_category = Credential.OTP
    requires_user = True

    def authenticate(self, ctx):
        if not self.configured_for(ctx, ctx.user):
            # Nothing can be set up in a password grant: the code is required, so it fails.
            return Outcome.failure("invalid_user_credentials", description=INVALID_CREDENTIALS)
        result = passwords.check_credential(ctx.realm, ctx.user, Credential.OTP, ctx.params.get("totp", ""),
                                         ip_address=ctx.ip_address)
        if not result.ok:
            return Outcome.failure(result.error, description=INVALID_CREDENTIALS)
        ctx.add_auth_method("otp")
        return Outcome.success()

    def configured_for(self, ctx, user):
        return get_credential_type(Credential.OTP).configured_for(user)


class RecoveryCodeForm(Authenticator):
    provider_id = "auth-recovery-authn-code-form"
    display_name = "Recovery Authentication Code Form"
    reference_category = recovery_codes.TYPE
    requires_user = True

    def page(self, ctx, *, error=""):
        kind = get_credential_type(recovery_codes.TYPE)
        remaining = kind.remaining(ctx.user)
        return ctx.render("login-recovery-authn-code-input.html", {
            "error": error, "code_number": kind.next_code_number(ctx.user), "remaining": remaining,
            "low_codes": remaining < recovery_codes.LOW_CODES_THRESHOLD})

    def authenticate(self, ctx):
        if not self.configured_for(ctx, ctx.user):
            return _require_enrolment(ctx, CONFIGURE_RECOVERY_AUTHN_CODES)
        return Outcome.challenge(self.page(ctx))

    def action(self, ctx):
        kind = get_credential_type(recovery_codes.TYPE)
        result = passwords.check_credential(ctx.realm, ctx.user, recovery_codes.TYPE,
                                         ctx.params.get("recoveryCodeInput", ""), ip_address=ctx.ip_address)
        if not result.ok:
            ctx.login_error(result.error, user=ctx.user)
            return Outcome.failure(result.error, self.page(ctx, error=INVALID_RECOVERY_CODE))
        if not kind.configured_for(ctx.user):  # the last code: the user must make new ones
            ctx.user.credentials.filter(type=recovery_codes.TYPE).delete()
            ctx.user.forget_credentials()
            _require_enrolment(ctx, CONFIGURE_RECOVERY_AUTHN_CODES)
        ctx.add_auth_method("recovery-authn-codes")
        return Outcome.success()

    def configured_for(self, ctx, user):
        return get_credential_type(recovery_codes.TYPE).configured_for(user)
