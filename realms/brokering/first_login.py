"""First broker login's steps, as Keycloak 26's broker authenticators run them. The broker keeps
the identity the provider proved (``context.keep``) and runs the provider's or the realm's first
broker login flow; these steps read it (``context.brokered``), may change it (the review page),
and leave the user the flow ends with (``ctx.set_user``). Linking is the broker's, once the flow
succeeded.

* ``idp-review-profile``: the profile page pre-filled from the identity (config
  ``update.profile.on.first.login``: ``on`` always, ``missing`` when a required field is missing
  or invalid, ``off`` never); the answers go back into the kept identity.
* ``idp-create-user-if-unique``: a new user when no account has the username or e-mail (the
  e-mail only counts when the realm refuses duplicate e-mails), else the account found is noted
  (``context.EXISTING_USER``) for the steps that confirm the link.
* ``idp-detect-existing-broker-user``: only an existing account may sign in through the provider.
* ``idp-confirm-link``: "Account already exists": link to it, or review the profile again.
* ``idp-username-password-form``: the existing account's password (then the flow's second
  factor); ``idp-email-verification`` (``link_email``) an e-mailed link instead.
* ``idp-auto-link``: links the existing account without asking; only where an admin put it.
* ``idp-confirm-override-link``: the existing account is linked to another account at the same
  provider: replace that link only when the person confirms (``OVERRIDE_LINK``).
"""
import logging

from django.http import HttpResponseRedirect

from ..audit import events
from ..data import realm_cache
from ..http import action_tokens, email, messages, themes
from ..http.messages import Message
from ..http.web import client_address
from ..models import Credential, FederatedIdentity, User
from ..signin import engine, passwords
from ..signin.flows import REQUIRED, Authenticator, Outcome, register_authenticator
from ..signin.views import original_session
from ..users import accounts, profile, storage, user_profile
from ..users.actions import register_required_action
from . import broker, context, linking
from .linking import VERIFY_LINK, clear_verified, mark_verified, take_verified

logger = logging.getLogger("idp.broker")

# Keycloak's authentication-session notes (AbstractIdpAuthenticator, AbstractIdentityProvider).
ENFORCE_UPDATE_PROFILE = "ENFORCE_UPDATE_PROFILE"
EMAIL_CHANGED = "UPDATE_PROFILE_EMAIL_CHANGED"
USERNAME_CHANGED = "UPDATE_PROFILE_USERNAME_CHANGED"
PROFILE_ATTRIBUTES = "profile_attributes"  # in the identity's context: the review's answers
REGISTERED_NEW_USER, OVERRIDE_LINK = broker.REGISTERED_NEW_USER, broker.OVERRIDE_LINK
# The attribute the existing account shares with the identity: [name, value] (the rest of
# Keycloak's ExistingUserInfo; its id is context.EXISTING_USER).
DUPLICATE = "EXISTING_USER_DUPLICATE"
VERIFIED_NOTE = "VERIFY_ACCOUNT_IDP_USERNAME"  # the e-mailed link was followed in this browser
SENT_NOTE = "IDP_LINK_CONFIRMATION_EMAIL_KEY"  # the address the link went to (no re-send on reload)
# What a restart of first broker login forgets (Keycloak's resetFlow clears the notes).
_FLOW_NOTES = (context.EXISTING_USER, DUPLICATE, REGISTERED_NEW_USER, OVERRIDE_LINK, EMAIL_CHANGED, USERNAME_CHANGED,
               VERIFIED_NOTE, SENT_NOTE)

UPDATE_PROFILE_ON_FIRST_LOGIN = "update.profile.on.first.login"
REQUIRE_PASSWORD_UPDATE = "require.password.update.after.registration"
UNEXPECTED = "identityProviderUnexpectedErrorMessage"


def _page(ctx, key, *args, status=400):
    return ctx.render("info.html", {"is_error": True, "message_key": Message(key, *args)}, status=status)


def unexpected(ctx):
    """The identity is gone or its provider disabled: Keycloak's IDENTITY_PROVIDER_ERROR."""
    return Outcome.failure("identity_provider_error", _page(ctx, UNEXPECTED))


def display_name(idp):
    return idp.display_name or idp.alias


def _walk(flow, prefix=""):
    for index, execution in enumerate(flow.executions if flow is not None else ()):
        path = f"{prefix}{index}"
        yield path, execution
        if execution.flow is not None and not execution.authenticator:
            yield from _walk(execution.flow, path + ".")


def _requirement(ctx):
    """The requirement of the execution now running (its path in the flow)."""
    return next((e.requirement for path, e in _walk(ctx.flow) if path == ctx.execution_path), "")


def _succeeded(ctx, provider_id):
    """Whether a step of ``provider_id`` already succeeded in this run of the flow."""
    done = ctx.auth_session.executions
    return any(e.authenticator == provider_id and done.get(path) == "success" for path, e in _walk(ctx.flow))


def restart(ctx):
    """Keycloak's resetFlow: first broker login again from its start, the review page enforced,
    the user and the notes of this run forgotten (the identity stays)."""
    session = ctx.auth_session
    for note in _FLOW_NOTES:
        session.notes.pop(note, None)
    session.notes[ENFORCE_UPDATE_PROFILE] = "true"
    engine.switch_flow(session, session.binding, session.notes.get(engine.FLOW_NOTE))
    session.user_id, session.auth_methods = "", []
    return Outcome.challenge(HttpResponseRedirect(ctx.action_url))


def existing_user(ctx):
    """The account noted as the identity's (Keycloak's getExistingUser), or None."""
    user_id = ctx.auth_session.notes.get(context.EXISTING_USER)
    return User.objects.filter(realm=ctx.realm, pk=user_id).first() if user_id else None


class BrokerStep(Authenticator):
    """A first broker login step: refuses without the kept identity or with its provider
    disabled (Keycloak's AbstractIdpAuthenticator), then ``run`` / ``answer``."""

    def authenticate(self, ctx):
        idp, identity = context.brokered(ctx)
        if idp is None or not idp.enabled:
            return unexpected(ctx)
        return self.run(ctx, idp, identity)

    def action(self, ctx):
        idp, identity = context.brokered(ctx)
        if idp is None or not idp.enabled:
            return unexpected(ctx)
        return self.answer(ctx, idp, identity)

    def run(self, ctx, idp, identity):
        raise NotImplementedError

    def answer(self, ctx, idp, identity):
        return self.run(ctx, idp, identity)


# Review profile -------------------------------------------------------------------------------

def _values(identity):
    return {"username": identity.username, "email": identity.email, "firstName": identity.first_name,
            "lastName": identity.last_name}


def _review_errors(realm, identity, data):
    """The profile's errors for ``data``; a username or e-mail another account has is no error
    while it is the provider's own (Keycloak's validators compare with the identity's value):
    the steps after the review decide what an existing account means."""
    cleaned, errors = user_profile.validate(realm, None, data, profile.IDP_REVIEW)
    submitted = {name: (data.get(name) or "").strip().lower() for name in ("username", "email")}
    for name, key in (("username", "usernameExistsMessage"), ("email", "emailExistsMessage")):
        if errors.get(name) == key and submitted[name] == (_values(identity)[name] or "").lower():
            errors.pop(name)
            cleaned[name] = submitted[name]
    if realm.registration_email_as_username and "email" in cleaned:
        errors.pop("username", None)
        cleaned["username"] = cleaned["email"]
    return cleaned, errors


class ReviewProfile(BrokerStep):
    provider_id = "idp-review-profile"
    display_name = "Review Profile"
    help_text = "User reviews and updates profile data retrieved from Identity Provider in the displayed form"
    config_properties = ({
        "name": UPDATE_PROFILE_ON_FIRST_LOGIN, "label": "Update profile on first login", "type": "List",
        "options": ["on", "missing", "off"], "defaultValue": "missing",
        "helpText": "Define conditions under which a user has to review and update his profile after first-time "
                    "login. Value 'On' means that page for reviewing profile will be displayed and user can review "
                    "and update his profile. Value 'off' means that page won't be displayed. Value 'missing' means "
                    "that page is displayed just when some required attribute is missing (wasn't downloaded from "
                    "identity provider). Value 'missing' is the default one."},)

    def page(self, ctx, values, errors=None, status=200):
        return ctx.render("login-update-profile.html", {
            "values": values, "errors": errors or {}, "username_editable": True, "email_editable": True,
            "profile": user_profile.form(ctx.realm, profile.IDP_REVIEW, values, errors or {},
                                         profile.requested_scopes(ctx.auth_session)),
            "show_username": not ctx.realm.registration_email_as_username})

    def _required(self, ctx, identity):
        if ctx.auth_session.notes.get(ENFORCE_UPDATE_PROFILE) == "true":
            return True
        mode = ctx.config.get(UPDATE_PROFILE_ON_FIRST_LOGIN, "missing")
        return mode == "on" or (mode == "missing" and bool(_review_errors(ctx.realm, identity, _values(identity))[1]))

    def run(self, ctx, idp, identity):
        if self._required(ctx, identity):
            return Outcome.challenge(self.page(ctx, _values(identity)))
        return Outcome.success()

    def answer(self, ctx, idp, identity):
        values = user_profile.submitted(ctx.realm, ctx.params)
        cleaned, errors = _review_errors(ctx.realm, identity, ctx.params)
        if errors:
            return Outcome.challenge(self.page(ctx, values, errors))
        notes = ctx.auth_session.notes
        # The provider's username for the link stays the provider's, whatever local one is chosen.
        identity.context.setdefault("broker_username", context.broker_username(identity))
        if cleaned["email"] != (identity.email or "").lower():
            notes[EMAIL_CHANGED] = "true"
            events.emit(ctx.realm, "UPDATE_EMAIL", client_id=ctx.client.client_id, ip_address=ctx.ip_address,
                        details={"previous_email": identity.email, "updated_email": cleaned["email"],
                                 "identity_provider": idp.alias})
            identity.email_verified = False  # an address typed here is nobody's proof
        if cleaned["username"] != (identity.username or "").lower():
            notes[USERNAME_CHANGED] = "true"
        identity.username, identity.email = cleaned["username"], cleaned["email"]
        identity.first_name, identity.last_name = cleaned["first_name"], cleaned["last_name"]
        identity.context[PROFILE_ATTRIBUTES] = cleaned.get("attributes", {})  # the profile's own, for the new user
        context.keep(ctx.auth_session, idp, identity)
        notes[ENFORCE_UPDATE_PROFILE] = "true"  # shown again if the person comes back to it
        return Outcome.success()


# Existing accounts ----------------------------------------------------------------------------

def _by_username(realm, username):
    return storage.REALM_DATABASE.get_user_by_username(realm, username) if username else None


def _by_email(realm, email):
    if not email:
        return None
    return User.objects.filter(realm=realm, email__iexact=email, service_account_client__isnull=True) \
        .order_by("username").first()


def find_existing(realm, username, email):
    """(user, attribute name, value) of the account the identity collides with, or None
    (Keycloak's checkExistingUser): the e-mail unless duplicates are allowed (and, where users
    sign in with their e-mail, an account whose username is that address), then the username
    (and, likewise, an account whose e-mail is that username)."""
    if email and not realm.duplicate_emails_allowed:
        user = _by_email(realm, email)
        if user is not None:
            return user, "email", user.email
        if realm.login_with_email_allowed:
            user = _by_username(realm, email)
            if user is not None:
                return user, "username", user.username
    user = _by_username(realm, username)
    if user is not None:
        return user, "username", user.username
    if realm.login_with_email_allowed and "@" in username[1:]:
        user = _by_email(realm, username)
        if user is not None:
            return user, "email", user.email
    return None


def local_username(realm, identity):
    """The new account's username: the e-mail where it is the username, else the identity's."""
    return ((identity.email if realm.registration_email_as_username else identity.username) or "").strip().lower()


def note_existing(ctx, found):
    user, name, value = found
    ctx.auth_session.notes[context.EXISTING_USER] = user.pk
    ctx.auth_session.notes[DUPLICATE] = [name, value]


class CreateUserIfUnique(BrokerStep):
    provider_id = "idp-create-user-if-unique"
    display_name = "Create User If Unique"
    help_text = ("Detect if there is existing Keycloak account with same email like identity provider. If no, "
                 "create new user")
    config_properties = ({
        "name": REQUIRE_PASSWORD_UPDATE, "label": "Require Password Update After Registration", "type": "boolean",
        "defaultValue": "false",
        "helpText": "If this option is true and new user is successfully imported from Identity Provider to Keycloak "
                    "(there is no duplicated email or username detected in Keycloak DB), then this user is required "
                    "to update his password"},)

    def run(self, ctx, idp, identity):
        notes, realm = ctx.auth_session.notes, ctx.realm
        if notes.get(context.EXISTING_USER):
            return Outcome.attempted()
        username = local_username(realm, identity)
        if not username:
            logger.info("realm %s: the identity from %s has no %s: review profile enforced", realm.name, idp.alias,
                        "e-mail" if realm.registration_email_as_username else "username")
            return restart(ctx)
        found = find_existing(realm, username, identity.email.lower())
        if found is None:
            user = accounts.create_user(
                realm, username, email=identity.email.lower(), first_name=identity.first_name,
                last_name=identity.last_name, attributes=identity.context.get(PROFILE_ATTRIBUTES, {}),
                email_verified=bool(identity.email and identity.email_verified and notes.get(EMAIL_CHANGED) != "true"),
                required_actions=["UPDATE_PASSWORD"] if ctx.config.get(REQUIRE_PASSWORD_UPDATE) == "true" else [])
            ctx.set_user(user)
            notes[REGISTERED_NEW_USER] = "true"
            return Outcome.success()
        if take_verified(found[0], idp, identity):  # the link was confirmed by e-mail in another browser
            ctx.set_user(found[0])
            return Outcome.success()
        note_existing(ctx, found)
        if _requirement(ctx) == REQUIRED:  # nothing else could handle it: say so (Keycloak's 409)
            user, name, value = found
            events.emit(realm, "IDENTITY_PROVIDER_FIRST_LOGIN_ERROR", client_id=ctx.client.client_id, user_id=user.pk,
                        ip_address=ctx.ip_address, error="federated_identity_account_exists",
                        details={f"existing_{name}": value, "identity_provider": idp.alias})
            return Outcome.failure("federated_identity_account_exists",
                                   _page(ctx, "federatedIdentityExistsMessage", name, value, status=409))
        return Outcome.attempted()


class DetectExistingBrokerUser(BrokerStep):
    provider_id = "idp-detect-existing-broker-user"
    display_name = "Detect existing broker user"
    help_text = ("Detect if there is an existing Keycloak account with same email like identity provider. If no, "
                 "throw an error.")

    def run(self, ctx, idp, identity):
        notes, realm = ctx.auth_session.notes, ctx.realm
        if notes.get(context.EXISTING_USER):
            return Outcome.attempted()
        username = local_username(realm, identity)
        if not username:
            return restart(ctx)
        found = find_existing(realm, username, identity.email.lower())
        if found is None:
            logger.info("realm %s: %s signed in with %s but has no account here", realm.name, username, idp.alias)
            events.emit(realm, "IDENTITY_PROVIDER_FIRST_LOGIN_ERROR", client_id=ctx.client.client_id,
                        ip_address=ctx.ip_address, error="user_not_found",
                        details={"authenticator": "DetectExistingBrokerUser", "identity_provider": idp.alias})
            return Outcome.failure("user_not_found", _page(ctx, "federatedIdentityUnavailableMessage", username,
                                                           idp.alias, status=401))
        note_existing(ctx, found)
        return Outcome.success()


class ConfirmLink(BrokerStep):
    provider_id = "idp-confirm-link"
    display_name = "Confirm link existing account"
    help_text = ("Show the form where user confirms if he wants to link identity provider with existing account or "
                 "rather edit user profile data retrieved from identity provider to avoid conflict")

    def run(self, ctx, idp, identity):
        duplicate = ctx.auth_session.notes.get(DUPLICATE)
        if not ctx.auth_session.notes.get(context.EXISTING_USER) or not duplicate:
            return Outcome.attempted()
        return Outcome.challenge(ctx.render("login-idp-link-confirm.html", {
            "message": Message("federatedIdentityConfirmLinkMessage", *duplicate),
            "idp_display_name": display_name(idp),
            "hide_review": not _succeeded(ctx, ReviewProfile.provider_id)}))

    def answer(self, ctx, idp, identity):
        chosen = ctx.params.get("submitAction", "")
        if chosen == "updateProfile" and _succeeded(ctx, ReviewProfile.provider_id):
            return restart(ctx)
        if chosen == "linkAccount":
            return Outcome.success()
        return self.run(ctx, idp, identity)


class UsernamePasswordForm(BrokerStep):
    """The existing account proves itself with its password (Keycloak's IdpUsernamePasswordForm):
    the username is the account's, shown and fixed; every failure is the login form's one
    message and a failed attempt for brute-force detection."""

    provider_id = "idp-username-password-form"
    display_name = "Username Password Form for identity provider reauthentication"
    help_text = "Validates a password from login form. Username may be already known from identity provider authentication"
    reference_category = Credential.PASSWORD

    def page(self, ctx, idp, user, error="", status=200):
        return ctx.render("login-idp-reauthenticate.html", {
            "username": user.username if user is not None else "", "error": error,
            "info": Message("federatedIdentityConfirmReauthenticateMessage", display_name(idp))}, status=status)

    def run(self, ctx, idp, identity):
        return Outcome.challenge(self.page(ctx, idp, existing_user(ctx)))

    def answer(self, ctx, idp, identity):
        user = existing_user(ctx)
        password = ctx.params.get("password", "")
        if user is None:
            username = ctx.params.get("username", "").strip()
            result = passwords.check_password(ctx.realm, username, password, ip_address=ctx.ip_address)
        else:
            username = user.username
            result = passwords.check_user_password(ctx.realm, user, password, ip_address=ctx.ip_address)
        if not result.ok:
            ctx.login_error(result.error, user=result.user, username=username)
            error = Message("userStorageUnavailableMessage" if result.unreachable else "invalidUserMessage")
            return Outcome.failure(result.error, self.page(ctx, idp, user, error))
        ctx.set_user(result.user)
        ctx.add_auth_method("pwd")
        return Outcome.success()


class AutoLink(BrokerStep):
    provider_id = "idp-auto-link"
    display_name = "Automatically set existing user"
    help_text = "Automatically set existing user to authentication context without any verification"

    def run(self, ctx, idp, identity):
        user = existing_user(ctx)
        if user is None or not user.enabled:
            return unexpected(ctx)
        logger.debug("realm %s: %s linked to %s automatically", ctx.realm.name, user.username, idp.alias)
        ctx.set_user(user)
        return Outcome.success()


class ConfirmOverrideLink(BrokerStep):
    provider_id = "idp-confirm-override-link"
    display_name = "Confirm override existing link"
    help_text = "Confirm override the link if there is an existing broker user linked to the account."

    def run(self, ctx, idp, identity):
        user = existing_user(ctx) or ctx.user
        if user is None:
            return unexpected(ctx)
        previous = FederatedIdentity.objects.filter(identity_provider=idp, user=user).first()
        if previous is None or previous.subject == identity.id:
            return Outcome.success()
        return Outcome.challenge(ctx.render("login-idp-link-override.html", {
            "message": Message("federatedIdentityConfirmOverrideMessage", user.username, idp.alias,
                               context.broker_username(identity), idp.alias, previous.user_name)}))

    def answer(self, ctx, idp, identity):
        if ctx.params.get("submitAction") != "confirmOverride":
            return self.run(ctx, idp, identity)
        ctx.auth_session.notes[OVERRIDE_LINK] = "true"
        return Outcome.success()


# Confirming the link by e-mail ---------------------------------------------------------------

class EmailVerification(BrokerStep):
    """Keycloak's IdpEmailVerificationAuthenticator: a link to the existing account's address;
    following it (``verify_link_token``) proves the person holds that account. Passed over
    without an SMTP server, or when the review changed the username or e-mail."""

    provider_id = "idp-email-verification"
    display_name = "Verify existing account by Email"
    help_text = "Email verification of existing Keycloak user, that wants to link his user account with identity provider"

    def page(self, ctx, idp, identity):
        return ctx.render("login-idp-link-email.html", {
            "idp_display_name": display_name(idp), "broker_username": context.broker_username(identity)})

    def run(self, ctx, idp, identity):
        notes, realm = ctx.auth_session.notes, ctx.realm
        if not email.configured(realm):
            logger.info("realm %s: no SMTP server: the account link is not confirmed by e-mail", realm.name)
            return Outcome.attempted()
        if notes.get(USERNAME_CHANGED) == "true" or notes.get(EMAIL_CHANGED) == "true":
            return Outcome.attempted()
        user = existing_user(ctx)
        if user is None or not user.enabled:
            return unexpected(ctx)
        if not user.email:
            return Outcome.attempted()
        username = context.broker_username(identity)
        if notes.get(VERIFIED_NOTE) == username or take_verified(user, idp, identity):
            clear_verified(user, idp, identity.id)
            ctx.set_user(user)
            return Outcome.success()
        if notes.get(SENT_NOTE) != user.email:
            notes[SENT_NOTE] = user.email
            self.send(ctx, idp, identity, user)
        return Outcome.challenge(self.page(ctx, idp, identity))

    def answer(self, ctx, idp, identity):
        if ctx.params.get("resend"):
            ctx.auth_session.notes.pop(SENT_NOTE, None)
        return self.run(ctx, idp, identity)

    def send(self, ctx, idp, identity, user):
        realm, session = ctx.realm, ctx.auth_session
        lifespan = action_tokens.user_lifespan(realm, VERIFY_LINK)
        username = context.broker_username(identity)
        token = action_tokens.create(realm, user, VERIFY_LINK, lifespan=lifespan, client_id=ctx.client.client_id,
                                     request=ctx.request, eml=user.email, idpu=username, idpa=idp.alias,
                                     idpuid=identity.id, oasid=f"{session.root_id}.{session.tab_id}")
        url = action_tokens.link(realm, token, ctx.request, client_id=ctx.client.client_id)
        locale = messages.locale_for(ctx.request, realm, user=user, auth_session=session)
        details = {"username": user.username, "email": user.email, "code_id": session.root_id,
                   "identity_provider": idp.alias, "identity_provider_identity": username}
        try:
            email.send_to_user(realm, user, "identity-provider-link", "identityProviderLinkSubject",
                               subject_args=(display_name(idp),), body_key="identityProviderLinkBody",
                               body_args=(display_name(idp), realm.display_name or realm.name, username, url,
                                          lifespan // 60, email.expiration_text(realm, locale, lifespan)),
                               locale=locale)
        except email.NotConfigured as exc:
            logger.warning("realm %s: account link e-mail not sent: %s", realm.name, exc)
            events.emit(realm, "SEND_IDENTITY_PROVIDER_LINK_ERROR", client_id=ctx.client.client_id, user_id=user.pk,
                        ip_address=ctx.ip_address, error="email_send_failed", details=details)
            return
        events.emit(realm, "SEND_IDENTITY_PROVIDER_LINK", client_id=ctx.client.client_id, user_id=user.pk,
                    ip_address=ctx.ip_address, details=details)


def _info(request, realm, key, *args, status=200, **extra):
    return themes.render(request, realm, "info.html", {"message_key": Message(key, *args), "is_error": status >= 400,
                                                       **extra}, status=status)


def verify_link_token(request, realm, claims):
    """The e-mailed link (Keycloak's IdpVerifyAccountLinkActionTokenHandler). A GET only says
    what it does (mail scanners open links); its button (a POST) uses it up, marks the address
    verified and: in the browser that signed in, lets that sign-in link and go on; in another,
    confirms the link for the original browser, which then continues."""
    config = realm_cache.get_realm(realm.name)
    user = User.objects.filter(realm=realm, pk=claims.get("sub")).first()
    client = config.client(claims.get("azp") or "account")
    if user is None or not user.enabled or client is None or user.email.lower() != str(claims.get("eml", "")).lower():
        return _info(request, realm, "invalidCodeMessage", status=400)
    alias, username = str(claims.get("idpa", "")), str(claims.get("idpu", ""))
    if request.method == "GET":
        return themes.render(request, realm, "login-idp-link-verify.html", {
            "message": Message("confirmAccountLinking", username, alias), "action_url": request.get_full_path()})
    try:
        action_tokens.consume(claims)
    except action_tokens.ExpiredToken:
        return _info(request, realm, "expiredActionTokenNoSessionMessage", status=400)
    user.email_verified = True
    user.save(update_fields=["email_verified"])
    events.emit(realm, "IDENTITY_PROVIDER_LINK_ACCOUNT", client_id=client.client_id, user_id=user.pk,
                ip_address=client_address(request), details={
                    "email": user.email, "identity_provider": alias, "identity_provider_identity": username})
    original = original_session(request, realm, claims)
    original_client = original and config.client_by_pk(original.client_pk)
    kept = (original.notes.get(context.BROKERED) or {}) if original is not None else {}
    if (original_client is not None and kept.get("alias") == alias
            and original.notes.get(context.EXISTING_USER) == user.pk):  # that sign-in, for this account
        original.notes[VERIFIED_NOTE] = username
        return engine.advance(request, realm, original_client, original)
    mark_verified(realm, user, alias, str(claims.get("idpuid", "")))
    return _info(request, realm, "identityProviderLinkSuccess", alias, username,
                 message_header="identityProviderLinkSuccessHeader")


STEPS = (ReviewProfile, CreateUserIfUnique, DetectExistingBrokerUser, ConfirmLink, UsernamePasswordForm, AutoLink,
         ConfirmOverrideLink, EmailVerification)


def register():
    """Called from RealmsConfig.ready: the first broker login steps, the e-mailed link's step and
    token, and the ``idp_link`` required action."""
    for step in STEPS:
        register_authenticator(step)
    action_tokens.register_handler(VERIFY_LINK, verify_link_token)
    register_required_action(linking.IdpLink)
