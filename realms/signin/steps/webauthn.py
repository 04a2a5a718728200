"""WebAuthn sign-in steps: Keycloak's ``webauthn-authenticator`` (a security key as the second
factor), ``webauthn-authenticator-passwordless`` (a passkey as the first factor) and the passkey
offered on the login form itself when the realm's "Enable Passkeys" is on (Keycloak 26.4's
conditional UI: the browser's autofill on the username field).

The page asks the browser (``static/v2/webauthn.js``) and posts its answer back under Keycloak's
field names (``credentialId``, ``clientDataJSON``, ``authenticatorData``, ``signature``,
``userHandle``, ``error``). The challenge lives in the authentication session and is used once.
A passkey sign-in is recorded as the auth method ``webauthn-passwordless``, which the built-in
2FA sub-flow's ``conditional-credential`` condition reads to skip the second factor (spec 1 §2).
"""
from ...credentials import get_credential_type
from ...credentials.webauthn import Assertion, CeremonyError, WebAuthnPolicy, new_challenge, user_id_from_handle
from ...models import Credential
from ...users import storage
from .. import passwords
from ..flows import Authenticator, Outcome
from .otp import _require_enrolment

CHALLENGE_NOTE = "WEBAUTH_CHALLENGE"  # Keycloak's WebAuthnConstants.AUTH_CHALLENGE_NOTE
WEBAUTHN_REGISTER, WEBAUTHN_REGISTER_PASSWORDLESS = "webauthn-register", "webauthn-register-passwordless"
# Keycloak's message keys (Messages.WEBAUTHN_ERROR_*).
ERROR_API_GET = "webauthn-error-api-get"
ERROR_VERIFICATION = "webauthn-error-auth-verification"
ERROR_USER_NOT_FOUND = "webauthn-error-user-not-found"
ERROR_DIFFERENT_USER = "webauthn-error-different-user"


def is_webauthn_answer(params):
    """Whether a post is the browser's WebAuthn answer (or its error) rather than a typed form."""
    return "authenticatorData" in params or "error" in params


def issue_challenge(ctx):
    challenge = new_challenge()
    ctx.auth_session.notes[CHALLENGE_NOTE] = challenge
    return challenge


def request_options(ctx, policy, allow=()):
    return policy.request_options(ctx.request, issue_challenge(ctx), allow)


def verify(ctx, kind, *, user=None):
    """Check the posted assertion: ``(user, "")`` when it proves ``user`` (or, without one, the
    user its user handle names), else ``(None or user, message key)``. Each refusal is a
    LOGIN_ERROR event and, for a known user, a failure towards brute-force lockout."""
    params = ctx.params
    challenge = ctx.auth_session.notes.pop(CHALLENGE_NOTE, "")  # one answer per challenge
    if params.get("error"):
        ctx.login_error("not_allowed", user=user)
        return user, ERROR_API_GET
    handle_id = user_id_from_handle(params.get("userHandle", "")) if params.get("userHandle") else None
    if user is None:
        user = storage.REALM_DATABASE.get_user_by_id(ctx.realm, handle_id) if handle_id else None
        if user is None:
            ctx.login_error(passwords.USER_NOT_FOUND)
            return None, ERROR_USER_NOT_FOUND
    elif handle_id is not None and handle_id != str(user.pk):
        ctx.login_error("different_user_authenticated", user=user)
        return user, ERROR_DIFFERENT_USER
    try:
        assertion = Assertion.from_form(params, challenge=challenge, policy=kind.policy(ctx.realm), request=ctx.request)
    except CeremonyError:
        ctx.login_error(passwords.INVALID_USER_CREDENTIALS, user=user)
        return user, ERROR_VERIFICATION
    result = passwords.check_credential(ctx.realm, user, kind.type, assertion, ip_address=ctx.ip_address)
    if not result.ok:
        ctx.login_error(result.error, user=user)
        return user, ERROR_USER_NOT_FOUND if result.error == passwords.INVALID_USER_CREDENTIALS else ERROR_VERIFICATION
    return user, ""


class WebAuthnAuthenticator(Authenticator):
    provider_id = "webauthn-authenticator"
    display_name = "WebAuthn Authenticator"
    requires_user = True
    reference_category = Credential.WEBAUTHN
    register_action = WEBAUTHN_REGISTER
    auth_method = "webauthn"

    @property
    def kind(self):
        return get_credential_type(self.reference_category)

    def page(self, ctx, *, error=""):
        user = ctx.user
        allow = self.kind.credentials(user) if user is not None else []
        options = request_options(ctx, self.kind.policy(ctx.realm), allow)
        return ctx.render("webauthn-authenticate.html", {
            "error": error, "webauthn_options": options, "authenticators": allow,
            "try_another_way": ctx.other_alternatives})

    def authenticate(self, ctx):
        if ctx.user is not None and not self.configured_for(ctx, ctx.user):
            return _require_enrolment(ctx, self.register_action)
        return Outcome.challenge(self.page(ctx))

    def action(self, ctx):
        if ctx.params.get("tryAnotherWay") and ctx.other_alternatives:
            return Outcome.attempted()
        user, error = verify(ctx, self.kind, user=ctx.user)
        if error:
            return Outcome.failure("invalid_user_credentials", self.page(ctx, error=error))
        ctx.set_user(user)
        ctx.add_auth_method(self.auth_method)
        return Outcome.success()

    def configured_for(self, ctx, user):
        return self.kind.configured_for(user)


class WebAuthnPasswordlessAuthenticator(WebAuthnAuthenticator):
    """A passkey names its user (the user handle), so it can start the sign-in; after another step
    identified the user, it must be one of that user's passkeys."""

    provider_id = "webauthn-authenticator-passwordless"
    display_name = "WebAuthn Passwordless Authenticator"
    requires_user = False
    reference_category = Credential.WEBAUTHN_PASSWORDLESS
    register_action = WEBAUTHN_REGISTER_PASSWORDLESS
    auth_method = Credential.WEBAUTHN_PASSWORDLESS


def passkeys_enabled(realm):
    """The passwordless policy's "Enable Passkeys" (``webAuthnPolicyPasswordlessPasskeysEnabled``)."""
    return realm.passkeys_enabled


def passkey_context(ctx):
    """What the login form needs to offer passkeys (conditional mediation on the username field
    and a "Sign in with a passkey" button); nothing when passkeys are off or the user is known."""
    if not passkeys_enabled(ctx.realm) or ctx.user is not None:
        return {}
    policy = WebAuthnPolicy.of(ctx.realm, passwordless=True)
    return {"passkeys": True, "webauthn_options": request_options(ctx, policy)}


def passkey_action(ctx):
    """The login form received a passkey answer: ``(Outcome.success()`` with the user set, or
    ``message key)`` to show on the form again."""
    user, error = verify(ctx, get_credential_type(Credential.WEBAUTHN_PASSWORDLESS))
    if error:
        return error
    ctx.set_user(user)
    ctx.add_auth_method(Credential.WEBAUTHN_PASSWORDLESS)
    return ""
