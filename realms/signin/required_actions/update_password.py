"""Keycloak's ``UPDATE_PASSWORD`` required action."""
from ...audit import events
from ...credentials import password_policy
from ...http import messages
from ...http.messages import Message
from ...users import storage
from ..flows import Outcome, RequiredAction


class UpdatePassword(RequiredAction):
    provider_id = "UPDATE_PASSWORD"
    max_auth_age = 300  # Keycloak's default for sensitive actions (kc_action re-authenticates)

    def challenge(self, ctx, *, error="", error_field=""):
        return ctx.render("update-password.html", {"error": error, "error_field": error_field})

    def evaluate_triggers(self, ctx):
        # forceExpiredPasswordChange(days): a password older than that must be changed now.
        user = ctx.user
        if self.provider_id not in user.required_actions and password_policy.expired(ctx.realm, user):
            user.required_actions = [*user.required_actions, self.provider_id]
            user.save(update_fields=["required_actions"])

    def process(self, ctx):
        new = ctx.params.get("password-new", "")
        confirm = ctx.params.get("password-confirm", "")
        if not new:
            return Outcome.challenge(self.challenge(ctx, error=Message("missingPasswordMessage"), error_field="password-new"))
        if new != confirm:
            return Outcome.challenge(self.challenge(ctx, error=Message("notMatchPasswordMessage"),
                                                    error_field="password-confirm"))
        user = ctx.user
        try:
            storage.set_password(ctx.realm, user, new)
        except storage.Unavailable:
            error = messages.text(ctx.realm, messages.locale_for(ctx.request, ctx.realm), "userStorageUnavailableMessage")
            return Outcome.challenge(self.challenge(ctx, error=error, error_field="password-new"))
        except password_policy.PasswordPolicyError as exc:
            return Outcome.challenge(self.challenge(ctx, error=exc.message(), error_field="password-new"))
        events.emit(ctx.realm, "UPDATE_PASSWORD", client_id=ctx.client.client_id, user_id=user.pk,
                    ip_address=ctx.ip_address)
        return Outcome.success()
