"""The reset-credentials flow's steps (Keycloak's "Forgot password?"): choose the user, e-mail
a link, set a new password, and reset the one-time-code device when the user has one.

Whether or not the name is known, the page answers the same ("You should receive an email
shortly"), and the e-mail leaves in the background (``realms.http.email``), so neither the answer
nor its timing tells who has an account. No e-mail goes to a disabled or locked-out user, and a
user gets at most one per ``RESEND_SECONDS`` however often the form is sent."""
import logging

from django.core.cache import cache

from ...audit import events
from ...http import action_tokens, email, messages
from ...models import Credential
from .. import bruteforce, passwords
from ..flows import Authenticator, Outcome
from ..required_actions.update_password import UpdatePassword

logger = logging.getLogger("idp.flows")

RESEND_SECONDS = 60
# Set by the e-mailed link (realms.signin.views.action_token): the user proved they read the mail.
EMAIL_VERIFIED_NOTE = "reset_email_verified"
_SENT_NOTE = "reset_email_sent"


class ChooseUser(Authenticator):
    provider_id = "reset-credentials-choose-user"
    display_name = "Choose User"

    def page(self, ctx, *, error="", username="", status=200):
        return ctx.render("login-reset-password.html", {"error": error, "username": username}, status=status)

    def authenticate(self, ctx):
        if ctx.user is not None:  # the e-mailed link opened in another browser names the user
            return Outcome.success()
        return Outcome.challenge(self.page(ctx, username=ctx.auth_session.login_hint))

    def action(self, ctx):
        username = ctx.params.get("username", "").strip()
        if not username:
            return Outcome.challenge(self.page(ctx, error="missingUsernameMessage", status=400))
        user = passwords.find_user(ctx.realm, username)
        ctx.auth_session.notes["attempted_username"] = username[:255]
        if user is None:
            ctx.login_error(passwords.USER_NOT_FOUND, username=username)
        elif not user.enabled:
            ctx.login_error(passwords.USER_DISABLED, user=user, username=username)
        else:
            ctx.set_user(user)
        return Outcome.success()  # the same next page either way


class SendEmail(Authenticator):
    provider_id = "reset-credential-email"
    display_name = "Send Reset Email"

    def authenticate(self, ctx):
        notes = ctx.auth_session.notes
        user = ctx.user
        if user is not None and notes.get(EMAIL_VERIFIED_NOTE) == user.pk:
            return Outcome.success()
        if not notes.get(_SENT_NOTE):
            notes[_SENT_NOTE] = "1"
            self._send(ctx, user)
        return Outcome.challenge(ctx.render("info.html", {"message_key": "emailSentMessage", "back_to_login": True}))

    def _send(self, ctx, user):
        realm = ctx.realm
        details = {"username": ctx.auth_session.notes.get("attempted_username", "")}
        if user is None or not user.email or not user.enabled or bruteforce.is_locked(realm, user):
            events.emit(realm, "SEND_RESET_PASSWORD_ERROR", client_id=ctx.client.client_id,
                        user_id=user.pk if user else "", ip_address=ctx.ip_address,
                        error="invalid_email" if user is not None else "user_not_found", details=details)
            return
        if not cache.add(f"idp:reset-mail:{user.pk}", 1, RESEND_SECONDS):
            logger.info("realm %s: reset e-mail to user %s held back (one per %s s)", realm.name, user.pk,
                        RESEND_SECONDS)
            return
        auth_session = ctx.auth_session
        lifespan = action_tokens.user_lifespan(realm, action_tokens.RESET_CREDENTIALS)
        token = action_tokens.create(realm, user, action_tokens.RESET_CREDENTIALS, lifespan=lifespan,
                                     client_id=ctx.client.client_id, request=ctx.request,
                                     oasid=f"{auth_session.root_id}.{auth_session.tab_id}")
        url = action_tokens.link(realm, token, ctx.request, client_id=ctx.client.client_id)
        # The locale of this sign-in's pages for this user (Keycloak resolves the e-mail's so).
        locale = messages.locale_for(ctx.request, realm, user=user, auth_session=auth_session)
        try:
            email.send_to_user(realm, user, "password-reset", "passwordResetSubject", body_args=(
                url, lifespan // 60, realm.display_name or realm.name, email.expiration_text(realm, locale, lifespan)),
                locale=locale)
        except email.NotConfigured as exc:
            logger.warning("realm %s: reset e-mail not sent: %s", realm.name, exc)
            events.emit(realm, "SEND_RESET_PASSWORD_ERROR", client_id=ctx.client.client_id, user_id=user.pk,
                        ip_address=ctx.ip_address, error="email_send_failed", details=details)
            return
        events.emit(realm, "SEND_RESET_PASSWORD", client_id=ctx.client.client_id, user_id=user.pk,
                    ip_address=ctx.ip_address, details={**details, "email": user.email})


class ResetPassword(Authenticator):
    provider_id = "reset-password"
    display_name = "Reset Password"
    reference_category = Credential.PASSWORD
    requires_user = True
    _form = UpdatePassword()

    def authenticate(self, ctx):
        return Outcome.challenge(self._form.challenge(ctx))

    def action(self, ctx):
        outcome = self._form.process(ctx)
        if outcome.kind == Outcome.SUCCESS:
            user = ctx.user
            if "UPDATE_PASSWORD" in user.required_actions:
                user.required_actions = [a for a in user.required_actions if a != "UPDATE_PASSWORD"]
                user.save(update_fields=["required_actions"])
            events.emit(ctx.realm, "RESET_PASSWORD", client_id=ctx.client.client_id, user_id=user.pk,
                        ip_address=ctx.ip_address)
        return outcome


class ResetOtp(Authenticator):
    """Keycloak's ``reset-otp``: the user's one-time-code devices are removed and CONFIGURE_TOTP
    makes them enrol a new one before the sign-in ends (Keycloak 26's "Remove all" action; its
    "remove one" choice between several devices is not offered)."""

    provider_id = "reset-otp"
    display_name = "Reset OTP"
    requires_user = True

    def configured_for(self, ctx, user):
        return user.credentials.filter(type=Credential.OTP).exists()

    def authenticate(self, ctx):
        user = ctx.user
        user.credentials.filter(type=Credential.OTP).delete()
        if "CONFIGURE_TOTP" not in user.required_actions:
            user.required_actions = [*user.required_actions, "CONFIGURE_TOTP"]
            user.save(update_fields=["required_actions"])
        return Outcome.success()
