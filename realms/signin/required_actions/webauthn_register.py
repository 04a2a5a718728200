"""Keycloak's ``webauthn-register`` (a security key for the second factor) and
``webauthn-register-passwordless`` (a passkey) required actions: the registration ceremony under
the realm's WebAuthn or passwordless policy. The challenge waits in the authentication session
and is used once; the credential is stored only when the browser's answer verifies against the
configured RP ID and origin (``realms.credentials.webauthn``)."""
from ...audit import events
from ...credentials import get_credential_type
from ...credentials.webauthn import CeremonyError, Registration, new_challenge
from ...models import Credential
from ..flows import Outcome, RequiredAction

CHALLENGE_NOTE = "WEBAUTH_REGISTER_CHALLENGE"
# Keycloak's message keys (Messages.WEBAUTHN_ERROR_REGISTRATION / _REGISTER_VERIFICATION).
ERROR_REGISTRATION = "webauthn-error-registration"
ERROR_VERIFICATION = "webauthn-error-register-verification"


class WebAuthnRegister(RequiredAction):
    provider_id = "webauthn-register"
    credential_type = Credential.WEBAUTHN

    @property
    def kind(self):
        return get_credential_type(self.credential_type)

    def challenge(self, ctx, *, error=""):
        kind, user = self.kind, ctx.user
        policy = kind.policy(ctx.realm)
        challenge = new_challenge()
        ctx.auth_session.notes[CHALLENGE_NOTE] = challenge
        exclude = kind.credentials(user) if policy.avoid_same_authenticator else ()
        return ctx.render("webauthn-register.html", {
            "error": error, "webauthn_options": policy.creation_options(ctx.request, user, challenge, exclude)})

    def process(self, ctx):
        params, kind, user = ctx.params, self.kind, ctx.user
        challenge = ctx.auth_session.notes.pop(CHALLENGE_NOTE, "")
        details = {"credential_type": self.credential_type}
        if params.get("error"):
            events.emit(ctx.realm, "UPDATE_CREDENTIAL_ERROR", client_id=ctx.client.client_id, user_id=user.pk,
                        ip_address=ctx.ip_address, error="invalid_registration", details=details)
            return Outcome.challenge(self.challenge(ctx, error=ERROR_REGISTRATION))
        try:
            registration = Registration.from_form(params, challenge=challenge, policy=kind.policy(ctx.realm),
                                                  request=ctx.request)
            credential = kind.create(user, registration, label=params.get("authenticatorLabel", "").strip())
        except CeremonyError as exc:
            events.emit(ctx.realm, "UPDATE_CREDENTIAL_ERROR", client_id=ctx.client.client_id, user_id=user.pk,
                        ip_address=ctx.ip_address, error="invalid_registration", details={**details, "reason": str(exc)})
            return Outcome.challenge(self.challenge(ctx, error=ERROR_VERIFICATION))
        events.emit(ctx.realm, "UPDATE_CREDENTIAL", client_id=ctx.client.client_id, user_id=user.pk,
                    ip_address=ctx.ip_address, details={**details, "credential_id": credential.pk})
        return Outcome.success()


class WebAuthnRegisterPasswordless(WebAuthnRegister):
    provider_id = "webauthn-register-passwordless"
    credential_type = Credential.WEBAUTHN_PASSWORDLESS
