"""Keycloak's ``TERMS_AND_CONDITIONS`` required action: accept (the time is kept in the user's
``terms_and_conditions`` attribute, as Keycloak does) or decline, which refuses the sign-in."""
import time

from ...audit import events
from ..flows import Outcome, RequiredAction

ATTRIBUTE = "terms_and_conditions"


class TermsAndConditions(RequiredAction):
    provider_id = "TERMS_AND_CONDITIONS"
    enabled_by_default = False  # as in Keycloak: a realm switches it on

    def challenge(self, ctx):
        return ctx.render("terms.html")

    def process(self, ctx):
        user = ctx.user
        if ctx.params.get("accept") is None:
            # Declined: Keycloak's event error rejected_by_user; the client hears access_denied.
            events.emit(ctx.realm, "CUSTOM_REQUIRED_ACTION_ERROR", client_id=ctx.client.client_id, user_id=user.pk,
                        ip_address=ctx.ip_address, error="rejected_by_user",
                        details={"custom_required_action": self.provider_id})
            return Outcome.failure("rejected_by_user")
        user.attributes = {**(user.attributes or {}), ATTRIBUTE: [str(int(time.time()))]}
        user.save(update_fields=["attributes"])
        events.emit(ctx.realm, "CUSTOM_REQUIRED_ACTION", client_id=ctx.client.client_id, user_id=user.pk,
                    ip_address=ctx.ip_address, details={"custom_required_action": self.provider_id})
        return Outcome.success()
