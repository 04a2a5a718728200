"""Keycloak's ``VERIFY_EMAIL`` required action: blocking until the user follows the link sent to
their address. The e-mail goes out once when the action is reached (and again on "Click here to
re-send"); the link (an action token, ``realms.http.action_tokens``) marks the address verified and,
in the browser that signed in, lets the sign-in go on (``realms.signin.views.action_token``)."""
import logging

from ...audit import events
from ...http import action_tokens, email, messages
from ..flows import Outcome, RequiredAction

logger = logging.getLogger("idp.email")

PROVIDER_ID = "VERIFY_EMAIL"
_SENT_NOTE = "verify_email_sent"  # the address the link went to in this sign-in


def send(ctx):
    """Send the verification link to the user's address (SEND_VERIFY_EMAIL event)."""
    realm, user = ctx.realm, ctx.user
    auth_session = ctx.auth_session
    lifespan = action_tokens.user_lifespan(realm, action_tokens.VERIFY_EMAIL)
    token = action_tokens.create(realm, user, action_tokens.VERIFY_EMAIL, lifespan=lifespan,
                                 client_id=ctx.client.client_id, request=ctx.request, eml=user.email,
                                 oasid=f"{auth_session.root_id}.{auth_session.tab_id}")
    send_verification(realm, user, action_tokens.link(realm, token, ctx.request, client_id=ctx.client.client_id),
                      lifespan, client_id=ctx.client.client_id, ip_address=ctx.ip_address,
                      locale=messages.locale_for(ctx.request, realm, user=user, auth_session=auth_session))
    auth_session.notes[_SENT_NOTE] = user.email


def send_verification(realm, user, url, lifespan, *, client_id="", ip_address="", locale=None):
    """``locale``: the one a sign-in page resolved (Keycloak's), else the user's own."""
    locale = locale or email.user_locale(realm, user)
    try:
        email.send_to_user(realm, user, "email-verification", "emailVerificationSubject", body_args=(
            url, lifespan // 60, realm.display_name or realm.name, email.expiration_text(realm, locale, lifespan)),
            locale=locale)
    except email.NotConfigured as exc:
        events.emit(realm, "SEND_VERIFY_EMAIL_ERROR", client_id=client_id, user_id=user.pk, ip_address=ip_address,
                    error="email_send_failed", details={"email": user.email})
        logger.warning("realm %s: verification e-mail not sent: %s", realm.name, exc)
        return False
    events.emit(realm, "SEND_VERIFY_EMAIL", client_id=client_id, user_id=user.pk, ip_address=ip_address,
                details={"email": user.email})
    return True


class VerifyEmail(RequiredAction):
    provider_id = PROVIDER_ID

    def evaluate_triggers(self, ctx):
        # Keycloak's trigger: the realm verifies addresses and this one is not verified yet.
        user = ctx.user
        if ctx.realm.verify_email and not user.email_verified and self.provider_id not in user.required_actions:
            user.required_actions = [*user.required_actions, self.provider_id]
            user.save(update_fields=["required_actions"])

    def challenge(self, ctx):
        return ctx.render("login-verify-email.html", {"email": ctx.user.email})

    def start(self, ctx):
        user = ctx.user
        if user.email_verified:
            return Outcome.success()
        if not user.email:
            page = ctx.render("info.html", {"is_error": True, "message_key": "missingEmailMessage"}, status=400)
            return Outcome.failure("invalid_email", page)
        if ctx.auth_session.notes.get(_SENT_NOTE) != user.email:
            send(ctx)
        return Outcome.challenge(self.challenge(ctx))

    def process(self, ctx):
        # The page's only form is "re-send"; the link, not this page, completes the action.
        user = ctx.user
        if user.email_verified:
            return Outcome.success()
        if ctx.params.get("resend") and user.email:
            send(ctx)
        return Outcome.challenge(self.challenge(ctx))
