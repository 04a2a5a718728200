"""Keycloak's ``CONFIGURE_TOTP`` required action: the user adds an authenticator app (QR code
and manual key in the ``otpauth://`` form) and proves it with a first code. The secret waits,
encrypted, in the authentication session until then."""
import segno
from django.db import transaction

from ...audit import events
from ...credentials import get_credential_type
from ...credentials.otp import OtpPolicy, base32, generate_secret
from ...data import crypto
from ...http import messages
from ...http.messages import Message
from ...models import Credential
from ..flows import Outcome, RequiredAction

_SECRET_NOTE = "totp_secret"
# Keycloak's messages (missingTotpMessage, invalidTotpMessage).
MISSING_TOTP = Message("missingTotpMessage")
INVALID_TOTP = Message("invalidTotpMessage")


class ConfigureTotp(RequiredAction):
    provider_id = "CONFIGURE_TOTP"
    max_auth_age = 300  # Keycloak's default for sensitive actions (kc_action re-authenticates)

    def _secret(self, ctx):
        note = ctx.auth_session.notes.get(_SECRET_NOTE)
        if note:
            return crypto.decrypt(note)
        secret = generate_secret()
        ctx.auth_session.notes[_SECRET_NOTE] = crypto.encrypt(secret)
        return secret

    def challenge(self, ctx, *, error=""):
        secret = self._secret(ctx)
        policy = OtpPolicy.of(ctx.realm)
        uri = policy.key_uri(ctx.realm, ctx.user, secret)
        manual_key = base32(secret.encode())
        return ctx.render("login-config-totp.html", {
            "error": error, "policy": policy, "key_uri": uri,
            "qr_svg": segno.make(uri, error="m").svg_inline(
                scale=4, title=messages.text(ctx.realm, ctx.locale, "loginTotpScanBarcode")),
            # Grouped by four as Keycloak shows it; apps ignore the spaces.
            "manual_key": " ".join(manual_key[i:i + 4] for i in range(0, len(manual_key), 4)),
            "user_label": ctx.params.get("userLabel", "") if ctx.request.method == "POST" else "",
        })

    def process(self, ctx):
        code = ctx.params.get("totp", "").strip()
        if not code:
            return Outcome.challenge(self.challenge(ctx, error=MISSING_TOTP))
        kind = get_credential_type(Credential.OTP)
        secret = self._secret(ctx)
        user = ctx.user
        with transaction.atomic():  # nobody sees the credential unless the code proves it
            credential = kind.create(user, secret, label=ctx.params.get("userLabel", "").strip()[:255])
            # The first code is checked against the new credential, under the same reuse rule.
            valid = kind.verify_credential(credential, code)
            if not valid:
                transaction.set_rollback(True)
        if not valid:
            return Outcome.challenge(self.challenge(ctx, error=INVALID_TOTP))
        ctx.auth_session.notes.pop(_SECRET_NOTE, None)
        ctx.add_auth_method("otp")
        events.emit(ctx.realm, "UPDATE_TOTP", client_id=ctx.client.client_id, user_id=user.pk,
                    ip_address=ctx.ip_address, details={"credential_type": Credential.OTP})
        return Outcome.success()
