"""Keycloak's ``auth-username-password-form`` step: the login page. With passkeys enabled it
also takes a passkey instead of the username and password (Keycloak 26.4's conditional UI)."""
from ...http.messages import Message
from ...models import Credential
from ...users import storage
from .. import passwords
from ..flows import Authenticator, Outcome
from .cookie import REAUTHENTICATION
from .webauthn import is_webauthn_answer, passkey_action, passkey_context, passkeys_enabled

GENERIC_LOGIN_ERROR = Message("invalidUserMessage")
# The username an earlier step was given (Keycloak's AbstractUsernameFormAuthenticator note: the
# organization step's identity-first page): the form shows it filled in.
ATTEMPTED_USERNAME = "ATTEMPTED_USERNAME"


class UsernamePasswordForm(Authenticator):
    provider_id = "auth-username-password-form"
    display_name = "Username Password Form"
    reference_category = Credential.PASSWORD

    def reference_categories(self, realm):
        # As Keycloak's optional reference category: the form takes passkeys when they are enabled.
        return {self.reference_category, *([Credential.WEBAUTHN_PASSWORDLESS] if passkeys_enabled(realm) else [])}

    def reauthenticating(self, ctx):
        """The user a re-authentication asks again (Keycloak's USERNAME_HIDDEN), or None."""
        return ctx.user if ctx.auth_session.notes.get(REAUTHENTICATION) else None

    def page(self, ctx, *, username="", error="", passkey_error="", status=200):
        known = self.reauthenticating(ctx)
        return ctx.render("login.html", {
            "username": known.username if known else username, "username_hidden": known is not None,
            "error": error, "passkey_error": passkey_error,
            "remember_me_allowed": ctx.realm.remember_me,
            "username_label": "usernameOrEmail" if ctx.realm.login_with_email_allowed else "username",
            # Keycloak's "Forgot Password?" and "Register" links, shown when the realm allows them.
            "reset_url": ctx.login_actions_url("reset-credentials") if ctx.realm.reset_password_allowed else "",
            "registration_url": ctx.login_actions_url("registration")
            if ctx.realm.registration_allowed and known is None else "",
            **passkey_context(ctx),
        }, status=status)

    def authenticate(self, ctx):
        notes = ctx.auth_session.notes
        return Outcome.challenge(self.page(ctx, username=notes.get(ATTEMPTED_USERNAME) or ctx.auth_session.login_hint))

    def action(self, ctx):
        if passkeys_enabled(ctx.realm) and is_webauthn_answer(ctx.params):
            error = passkey_action(ctx)
            if error:
                return Outcome.failure("invalid_user_credentials", self.page(ctx, passkey_error=error))
            return Outcome.success()
        known = self.reauthenticating(ctx)
        # Re-authenticating, the password is the known user's, whatever username a form posts.
        username = known.username if known else ctx.params.get("username", "").strip()
        result = passwords.check_password(ctx.realm, username, ctx.params.get("password", ""),
                                       ip_address=ctx.ip_address)
        if not result.ok:
            ctx.login_error(result.error, user=result.user, username=username)
            # One message for every failure: nothing tells an attacker which part was wrong. But a
            # directory that cannot be reached is said so: retrying later is what helps.
            error = GENERIC_LOGIN_ERROR
            if result.unreachable:
                error = Message("userStorageUnavailableMessage")
            return Outcome.failure(result.error, self.page(ctx, username=username, error=error))
        ctx.set_user(result.user)
        ctx.add_auth_method("pwd")
        ctx.auth_session.remember_me = ctx.realm.remember_me and ctx.params.get("rememberMe") == "on"
        return Outcome.success()

    def configured_for(self, ctx, user):
        return storage.is_configured_for(ctx.realm, user, Credential.PASSWORD)
