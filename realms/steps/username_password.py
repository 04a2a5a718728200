"""Keycloak's ``auth-username-password-form`` step: the login page."""
from .. import messages, signin, storage
from ..flows import Authenticator, Outcome
from ..models import Credential

GENERIC_LOGIN_ERROR = "Invalid username or password."


class UsernamePasswordForm(Authenticator):
    provider_id = "auth-username-password-form"
    display_name = "Username Password Form"

    def page(self, ctx, *, username="", error="", status=200):
        return ctx.render("login.html", {
            "username": username, "error": error,
            "remember_me_allowed": ctx.realm.remember_me,
            "username_label": "Username or email" if ctx.realm.login_with_email_allowed else "Username",
        }, status=status)

    def authenticate(self, ctx):
        return Outcome.challenge(self.page(ctx, username=ctx.auth_session.login_hint))

    def action(self, ctx):
        username = ctx.params.get("username", "").strip()
        result = signin.check_password(ctx.realm, username, ctx.params.get("password", ""),
                                       ip_address=ctx.ip_address)
        if not result.ok:
            ctx.login_error(result.error, user=result.user, username=username)
            # One message for every failure: nothing tells an attacker which part was wrong. But a
            # directory that cannot be reached is said so: retrying later is what helps.
            error = GENERIC_LOGIN_ERROR
            if result.unreachable:
                error = messages.text(ctx.realm, messages.locale_for(ctx.request, ctx.realm),
                                      "userStorageUnavailableMessage")
            return Outcome.failure(result.error, self.page(ctx, username=username, error=error))
        ctx.set_user(result.user)
        ctx.add_auth_method("pwd")
        ctx.auth_session.remember_me = ctx.realm.remember_me and ctx.params.get("rememberMe") == "on"
        return Outcome.success()

    def configured_for(self, ctx, user):
        return storage.is_configured_for(ctx.realm, user, Credential.PASSWORD)
