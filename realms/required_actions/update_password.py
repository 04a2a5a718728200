"""Keycloak's ``UPDATE_PASSWORD`` required action."""
from .. import events
from ..flows import Outcome, RequiredAction


class UpdatePassword(RequiredAction):
    provider_id = "UPDATE_PASSWORD"

    def challenge(self, ctx, *, error="", error_field=""):
        return ctx.render("update-password.html", {"error": error, "error_field": error_field})

    def process(self, ctx):
        new = ctx.params.get("password-new", "")
        confirm = ctx.params.get("password-confirm", "")
        if not new:
            return Outcome.challenge(self.challenge(ctx, error="Please specify password.", error_field="password-new"))
        if new != confirm:
            return Outcome.challenge(self.challenge(ctx, error="Passwords don't match.", error_field="password-confirm"))
        user = ctx.user
        user.set_password(new)
        events.emit(ctx.realm, "UPDATE_PASSWORD", client_id=ctx.client.client_id, user_id=user.pk,
                    ip_address=ctx.ip_address)
        return Outcome.success()
