"""Keycloak's ``VERIFY_PROFILE`` required action: a user whose stored profile does not satisfy the
realm's declarative profile (a required attribute missing, a value a validator refuses) completes
it on the update-profile form before the sign-in goes on. Added at sign-in when the profile is
incomplete in a realm with a stored profile (every Keycloak 24+ export, or one set through the
Admin API; a realm without one keeps the rules it had, decision 0089); asked of a user who has
nothing left to fix, it is done at once."""
from ...users import profile, user_profile
from ...users.profile import config as upconfig
from ..flows import Outcome
from .update_profile import UpdateProfile


class VerifyProfile(UpdateProfile):
    provider_id = "VERIFY_PROFILE"

    def evaluate_triggers(self, ctx):
        user = ctx.user
        if self.provider_id not in user.required_actions and upconfig.stored(ctx.realm) is not None \
                and user_profile.incomplete(
                ctx.realm, user, profile.requested_scopes(ctx.auth_session)):
            user.required_actions = [*user.required_actions, self.provider_id]
            user.save(update_fields=["required_actions"])

    def start(self, ctx):
        if not user_profile.incomplete(ctx.realm, ctx.user, profile.requested_scopes(ctx.auth_session)):
            return Outcome.success()
        values = user_profile.values(ctx.user)
        _, errors = user_profile.validate(ctx.realm, ctx.user, values, profile.UPDATE_PROFILE,
                                          profile.requested_scopes(ctx.auth_session))
        return Outcome.challenge(self.challenge(ctx, values=values, errors=errors))
