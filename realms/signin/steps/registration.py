"""The registration flow (Keycloak's ``registration-page-form`` and its form actions): one page
whose posted fields each enabled form action checks (profile, password, terms), then
``registration-user-creation`` creates the user, who is then signed in (with VERIFY_EMAIL first
when the realm verifies addresses).

``registration-recaptcha-action`` needs Google's reCAPTCHA service, which this server does not
call: a realm that enables it gets no registration page at all (and a warning at import), never
a page that silently skips the check."""
import time

from django.db import transaction

from ...audit import events
from ...credentials import password_policy
from ...data import rows
from ...http import action_tokens
from ...models import User
from ...users import accounts, organizations, profile, user_profile
from ..flows import DISABLED, Authenticator, Outcome
from ..required_actions import terms_and_conditions

USER_CREATION = "registration-user-creation"
PASSWORD = "registration-password-action"
TERMS = "registration-terms-and-conditions"
RECAPTCHA = "registration-recaptcha-action"
SUPPORTED_ACTIONS = (USER_CREATION, PASSWORD, TERMS)


def enabled_actions(flow):
    return [e.authenticator for e in (flow.executions if flow else ()) if e.requirement != DISABLED]


class RegistrationPage(Authenticator):
    provider_id = "registration-page-form"
    display_name = "Registration Page"

    def page(self, ctx, *, values=None, errors=None, status=200):
        actions = enabled_actions(ctx.form_flow)
        invited = ctx.auth_session.notes.get(organizations.INVITE_NOTE)
        if invited:  # the invited address, not to be changed
            values = {**(values or {}), "email": invited["email"]}
        return ctx.render("register.html", {
            "values": values or {}, "errors": errors or {}, "email_fixed": bool(invited),
            "profile": user_profile.form(ctx.realm, profile.REGISTRATION, values or {}, errors or {},
                                         profile.requested_scopes(ctx.auth_session)),
            "show_username": not ctx.realm.registration_email_as_username,
            "password": PASSWORD in actions, "terms": TERMS in actions,
        }, status=status)

    def _refused(self, ctx):
        # An organization's invitation lets its invitee register where anyone else may not.
        if not ctx.realm.registration_allowed and not ctx.auth_session.notes.get(organizations.INVITE_NOTE):
            return Outcome.failure("registration_disabled", ctx.render(
                "info.html", {"is_error": True, "message_key": "registrationNotAllowedMessage"}, status=403))
        unsupported = [a for a in enabled_actions(ctx.form_flow) if a not in SUPPORTED_ACTIONS]
        if unsupported:
            return Outcome.failure("registration_disabled", ctx.render(
                "info.html", {"is_error": True, "message_key": "registrationNotAllowedMessage"}, status=501))
        return None

    def authenticate(self, ctx):
        return self._refused(ctx) or Outcome.challenge(self.page(ctx))

    def action(self, ctx):
        refused = self._refused(ctx)
        if refused is not None:
            return refused
        realm, params = ctx.realm, ctx.params
        invited = ctx.auth_session.notes.get(organizations.INVITE_NOTE)
        if invited:
            params = {**dict(params.items()), "email": invited["email"]}
        actions = enabled_actions(ctx.form_flow)
        cleaned, errors = user_profile.validate(realm, None, params,
                                                scopes=profile.requested_scopes(ctx.auth_session))
        password = params.get("password", "")
        candidate = User(realm=realm, **cleaned)  # what the password policy checks against
        if PASSWORD in actions:
            if not password:
                errors["password"] = "missingPasswordMessage"
            elif password != params.get("password-confirm", ""):
                errors["password_confirm"] = "notMatchPasswordMessage"
            else:
                try:
                    password_policy.validate(candidate, password)
                except password_policy.PasswordPolicyError as exc:
                    # The policy's own message (with its numbers); shown as it is, as the
                    # UPDATE_PASSWORD page shows it.
                    errors["password"] = str(exc)
        if TERMS in actions and params.get("termsAccepted") != "on":
            errors["termsAccepted"] = "termsAcceptanceRequired"
        if errors:
            return self._invalid(ctx, params, errors)
        fields = {k: v for k, v in cleaned.items() if k != "username"}
        if TERMS in actions:  # accepted now: written with the new user's row
            fields["attributes"] = {**fields.get("attributes", {}),
                                    terms_and_conditions.ATTRIBUTE: [str(int(time.time()))]}
        try:
            with rows.batch():  # the new user's rows in one round trip, after the password's hash
                # The password in the user's store: the directory's for a user created there (LDAP's
                # sync registrations), whose own password policy may still refuse it.
                user = accounts.create_user(realm, cleaned["username"],
                                            password=password if PASSWORD in actions else None, **fields)
                if invited:
                    refused = self._join(ctx, user, invited)
                    if refused is not None:
                        transaction.set_rollback(True)
                        return refused
        except password_policy.PasswordPolicyError as exc:
            return self._invalid(ctx, params, {"password": str(exc)})
        ctx.set_user(user)
        ctx.add_auth_method("pwd")
        if invited:
            events.emit(realm, "INVITE_ORG", client_id=ctx.client.client_id, user_id=user.pk,
                        ip_address=ctx.ip_address, details={"org_id": invited["org_id"]})
        events.emit(realm, "REGISTER", client_id=ctx.client.client_id, user_id=user.pk, ip_address=ctx.ip_address,
                    details={"username": user.username, "email": user.email, "register_method": "form",
                             "redirect_uri": ctx.auth_session.client_data.get("redirect_uri", "")})
        return Outcome.success()

    def _invalid(self, ctx, params, errors):
        values = user_profile.submitted(ctx.realm, params)
        ctx.login_error("invalid_registration", username=values.get("username") or values.get("email", ""))
        return Outcome.challenge(self.page(ctx, values=values, errors=errors, status=400))

    def _join(self, ctx, user, invited):
        """The new user joins the inviting organization, using up the invitation (a failure when
        it was used meanwhile, or the organization went); the link proved the address."""
        org = organizations.invited_organization(ctx.realm, invited)
        try:
            if org is None:
                raise action_tokens.InvalidToken("organization gone")
            organizations.join(org, user, invited)
        except (action_tokens.ExpiredToken, action_tokens.InvalidToken):
            return Outcome.failure("invalid_code", ctx.render(
                "info.html", {"is_error": True, "message_key": "expiredActionTokenNoSessionMessage"}, status=400))
        user.email_verified = True
        user.save(update_fields=["email_verified"])
        return None
