"""Keycloak's ``UPDATE_EMAIL`` required action (its ``update-email`` feature): one e-mail field.

A realm turns the action on (it is not in a new realm's list, as in Keycloak, whose feature is
off by default: the Admin API's register-required-action adds it). Then the address changes only
through it (``realms.users.user_profile.email_editable``). Without e-mail verification the change is
made at once; with it, the address stays as it is and a link (an ``update-email`` action token
carrying ``oldEmail`` and ``newEmail``) goes to the new address; following it makes the change,
checked again then (someone may have taken the address meanwhile), and the address is verified.
"Sign out from other devices" (``logout-sessions``, on by default) ends the user's other
sessions when the change is made (the token carries the choice: ``logoutSessions``).
"""
import logging

from ...audit import events
from ...http import action_tokens, email, messages
from ...http.messages import Message
from ...models import UserSession
from ...sso import sessions, sso_cookie
from ...users import user_profile
from ..flows import Outcome, RequiredAction

logger = logging.getLogger("idp.email")

PROVIDER_ID = user_profile.UPDATE_EMAIL
# Auth-session note: the link was followed in this browser, the sign-in goes on.
CONFIRMED_NOTE = "update_email_confirmed"


def change_now(realm, user, new_email, *, client_id, ip_address, verified):
    """Store ``new_email`` (and the username when the e-mail is the username) with the
    UPDATE_EMAIL event; ``verified`` when a link sent to it proved the address."""
    previous = user.email
    fields = {"email": new_email}
    if realm.registration_email_as_username:
        fields["username"] = new_email
    user_profile.apply(user, fields)
    if verified:
        user.email_verified = True
    done = {PROVIDER_ID, "VERIFY_EMAIL"} if verified else {PROVIDER_ID}
    user.required_actions = [a for a in user.required_actions if a not in done]
    user.save()
    events.emit(realm, "UPDATE_EMAIL", client_id=client_id, user_id=user.pk, ip_address=ip_address,
                details={"previous_email": previous, "updated_email": new_email})


def logout_other_sessions(request, realm, user):
    """Keycloak's "Sign out from other devices": the user's online sessions end, except the one
    of this browser."""
    current = sso_cookie.session_from_request(request, realm)
    keep = current.pk if current is not None and current.user_id == user.pk else None
    for user_session in UserSession.objects.filter(user=user, offline=False).exclude(pk=keep):
        sessions.end_session(user_session, reason=sessions.REASON_LOGOUT)


def check(realm, user, claims):
    """Whether an ``update-email`` link still applies: the error key when it does not, else None."""
    if str(claims.get("oldEmail") or "").lower() != (user.email or "").lower():
        return "staleEmailVerificationLink"
    return user_profile.check_email(realm, user, str(claims.get("newEmail") or "").lower())


class UpdateEmail(RequiredAction):
    provider_id = PROVIDER_ID
    display_name = "Update Email"
    enabled_by_default = False
    max_auth_age = 300  # a new address is a sensitive change: an application's request needs a recent sign-in

    def evaluate_triggers(self, ctx):
        # Keycloak: UPDATE_EMAIL takes VERIFY_EMAIL's place (its link verifies the new address).
        user = ctx.user
        if self.provider_id in user.required_actions and "VERIFY_EMAIL" in user.required_actions:
            user.required_actions = [a for a in user.required_actions if a != "VERIFY_EMAIL"]
            user.save(update_fields=["required_actions"])

    def challenge(self, ctx, *, value=None, error=None):
        return ctx.render("update-email.html", {"email": ctx.user.email if value is None else value,
                                                "error": error})

    def start(self, ctx):
        if ctx.auth_session.notes.pop(CONFIRMED_NOTE, None) == ctx.user.email:
            return Outcome.success()  # the link was followed in this browser
        return Outcome.challenge(self.challenge(ctx))

    def process(self, ctx):
        realm, user = ctx.realm, ctx.user
        new_email = (ctx.params.get("email") or "").strip().lower()
        error = user_profile.check_email(realm, user, new_email)
        if error:
            return Outcome.challenge(self.challenge(ctx, value=new_email, error=error))
        logout_sessions = ctx.params.get("logout-sessions") == "on"
        if not realm.verify_email or (new_email == user.email and user.email_verified):
            if logout_sessions:
                logout_other_sessions(ctx.request, realm, user)
            change_now(realm, user, new_email, client_id=ctx.client.client_id, ip_address=ctx.ip_address,
                       verified=new_email == user.email and user.email_verified)
            return Outcome.success()
        return self._send_confirmation(ctx, new_email, logout_sessions)

    def _send_confirmation(self, ctx, new_email, logout_sessions):
        """The link to the new address (SEND_VERIFY_EMAIL with that address, as Keycloak)."""
        realm, user, auth_session = ctx.realm, ctx.user, ctx.auth_session
        client_id = ctx.client.client_id
        lifespan = action_tokens.user_lifespan(realm, action_tokens.UPDATE_EMAIL)
        token = action_tokens.create(realm, user, action_tokens.UPDATE_EMAIL, lifespan=lifespan, client_id=client_id,
                                     request=ctx.request, oldEmail=user.email, newEmail=new_email,
                                     logoutSessions=logout_sessions,
                                     reduri=auth_session.client_data.get("redirect_uri", ""),
                                     oasid=f"{auth_session.root_id}.{auth_session.tab_id}")
        url = action_tokens.link(realm, token, ctx.request, client_id=client_id)
        locale = messages.locale_for(ctx.request, realm, user=user, auth_session=auth_session)
        try:
            email.send_to_user(realm, user, "email-update-confirmation", "emailUpdateConfirmationSubject",
                               body_args=(url, new_email, realm.display_name or realm.name,
                                          email.expiration_text(realm, locale, lifespan)),
                               to=new_email, locale=locale)
        except email.NotConfigured as exc:
            logger.warning("realm %s: e-mail update confirmation not sent: %s", realm.name, exc)
            events.emit(realm, "SEND_VERIFY_EMAIL_ERROR", client_id=client_id, user_id=user.pk,
                        ip_address=ctx.ip_address, error="email_send_failed", details={"email": new_email})
            return Outcome.challenge(ctx.render("info.html", {"is_error": True, "message_key": "emailSendErrorMessage"},
                                                status=500))
        events.emit(realm, "SEND_VERIFY_EMAIL", client_id=client_id, user_id=user.pk, ip_address=ctx.ip_address,
                    details={"email": new_email})
        return Outcome.challenge(ctx.render("info.html", {
            "message_header": "emailUpdateConfirmationSentTitle",
            "message_key": Message("emailUpdateConfirmationSent", new_email)}))
