"""Keycloak's ``UPDATE_PROFILE`` required action: the realm's user profile (``realms.users.user_profile``)
as a form, every field checked; a changed address is no longer verified (and VERIFY_EMAIL
follows when the realm verifies addresses)."""
from ...audit import events
from ...errors import StoreRefused
from ...users import profile, user_profile
from ..flows import Outcome, RequiredAction


class UpdateProfile(RequiredAction):
    provider_id = "UPDATE_PROFILE"

    def challenge(self, ctx, *, values=None, errors=None, refused=""):
        user = ctx.user
        values = values if values is not None else user_profile.values(user)
        return ctx.render("login-update-profile.html", {
            "values": values, "errors": errors or {}, "refused": refused,
            "profile": user_profile.form(ctx.realm, profile.UPDATE_PROFILE, values, errors or {},
                                         profile.requested_scopes(ctx.auth_session)),
            "username_editable": user_profile.username_editable(ctx.realm, user),
            "email_editable": user_profile.email_editable(ctx.realm, user),
            "show_username": not ctx.realm.registration_email_as_username})

    def process(self, ctx):
        user = ctx.user
        cleaned, errors = user_profile.validate(ctx.realm, user, ctx.params, scopes=profile.requested_scopes(ctx.auth_session))
        values = user_profile.submitted(ctx.realm, ctx.params)
        if errors:
            return Outcome.challenge(self.challenge(ctx, values=values, errors=errors))
        previous = user_profile.apply(user, cleaned)
        if previous is not None and ctx.realm.verify_email and "VERIFY_EMAIL" not in user.required_actions:
            user.required_actions = [*user.required_actions, "VERIFY_EMAIL"]
        try:
            user.save()
        except StoreRefused as exc:  # the user's directory refused the change: nothing was saved
            return Outcome.challenge(self.challenge(ctx, values=values, refused=exc.detail))
        details = {"context": self.provider_id}
        if previous is not None:
            events.emit(ctx.realm, "UPDATE_EMAIL", client_id=ctx.client.client_id, user_id=user.pk,
                        ip_address=ctx.ip_address, details={"previous_email": previous, "updated_email": user.email})
        events.emit(ctx.realm, "UPDATE_PROFILE", client_id=ctx.client.client_id, user_id=user.pk,
                    ip_address=ctx.ip_address, details=details)
        return Outcome.success()
