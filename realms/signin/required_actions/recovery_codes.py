"""Keycloak's ``CONFIGURE_RECOVERY_AUTHN_CODES`` required action: 12 new codes shown once; the
user confirms they saved them, and only then do they replace the old ones. The codes wait,
encrypted, in the authentication session until then."""
import json

from ...audit import events
from ...credentials import get_credential_type
from ...credentials.recovery_codes import TYPE, formatted, generate_codes
from ...data import crypto
from ...http.messages import Message
from ..flows import Outcome, RequiredAction

_CODES_NOTE = "recovery_codes"
CONFIRM_FIELD = "kcRecoveryCodesConfirmationCheck"
NOT_CONFIRMED = Message("recovery-codes-error-unconfirmed")


class ConfigureRecoveryCodes(RequiredAction):
    provider_id = "CONFIGURE_RECOVERY_AUTHN_CODES"

    def _codes(self, ctx):
        note = ctx.auth_session.notes.get(_CODES_NOTE)
        if note:
            return json.loads(crypto.decrypt(note))
        codes = generate_codes()
        ctx.auth_session.notes[_CODES_NOTE] = crypto.encrypt(json.dumps(codes))
        return codes

    def challenge(self, ctx, *, error=""):
        return ctx.render("login-recovery-authn-code-config.html", {
            "error": error, "codes": [formatted(c) for c in self._codes(ctx)], "confirm_field": CONFIRM_FIELD})

    def process(self, ctx):
        if not ctx.params.get(CONFIRM_FIELD):
            return Outcome.challenge(self.challenge(ctx, error=NOT_CONFIRMED))
        codes = self._codes(ctx)
        get_credential_type(TYPE).create(ctx.user, codes, label=ctx.params.get("userLabel", "").strip()[:255])
        ctx.auth_session.notes.pop(_CODES_NOTE, None)
        events.emit(ctx.realm, "UPDATE_CREDENTIAL", client_id=ctx.client.client_id, user_id=ctx.user.pk,
                    ip_address=ctx.ip_address, details={"credential_type": TYPE})
        return Outcome.success()
