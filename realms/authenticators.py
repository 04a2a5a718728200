"""The sign-in steps this service ships: Cookie, Username Password Form and the
"user configured" condition. Later steps (OTP, passkeys, the identity-provider redirector,
Kerberos) register themselves the same way from their own apps."""

from . import bruteforce, sso_cookie
from .flows import Authenticator, Outcome, execution_levels, is_configured, register_authenticator
from .hashers import spend_check_time
from .models import User

GENERIC_LOGIN_ERROR = "Invalid username or password."
# Authentication-session note (Keycloak's AuthenticationManager.SSO_AUTH): the user was answered
# from the SSO session, not by a fresh authentication; protocols copy it to the client session
# (OIDC's acr is then "0" instead of "1").
SSO_AUTH = "SSO_AUTH"


@register_authenticator
class CookieAuthenticator(Authenticator):
    """An existing SSO session (cookie ``SERVICE_IDENTITY``) signs the user in without a form,
    unless the client asked to re-authenticate (prompt=login, max_age exceeded)."""

    provider_id = "auth-cookie"
    display_name = "Cookie"

    def authenticate(self, ctx):
        if ctx.auth_session.force_login:
            return Outcome.attempted()
        user_session = sso_cookie.session_from_request(ctx.request, ctx.realm)
        if user_session is None:
            return Outcome.attempted()
        ctx.set_user(user_session.user)
        ctx.user_session = user_session
        ctx.auth_session.sso_session_id = user_session.pk
        ctx.auth_session.notes[SSO_AUTH] = "true"
        return Outcome.success()


def find_user(realm, username):
    """The realm user named ``username`` (case-insensitive, as Keycloak stores names lower-case),
    or with that e-mail address when the realm allows it and exactly one user has it."""
    # A raw query (the same as the ORM's username__iexact, first by username): every sign-in runs
    # it, and the ORM's query compiler costs more CPU than the database spends answering it.
    user = next(iter(User.objects.raw(
        f"SELECT * FROM {User._meta.db_table} WHERE realm_id = %s AND UPPER(username) = UPPER(%s)"
        " AND service_account_client_id IS NULL ORDER BY username LIMIT 1", [realm.pk, username])), None)
    if user is None and realm.login_with_email_allowed and "@" in username:
        matches = list(User.objects.filter(realm=realm, email__iexact=username)[:2])
        user = matches[0] if len(matches) == 1 else None
    return user


@register_authenticator
class UsernamePasswordForm(Authenticator):
    provider_id = "auth-username-password-form"
    display_name = "Username Password Form"

    def page(self, ctx, *, username="", error="", status=200):
        return ctx.render("login.html", {
            "username": username, "error": error,
            "remember_me_allowed": ctx.realm.remember_me,
            "username_label": "Username or email" if ctx.realm.login_with_email_allowed else "Username",
        }, status=status)

    def authenticate(self, ctx):
        return Outcome.challenge(self.page(ctx, username=ctx.auth_session.login_hint))

    def action(self, ctx):
        username = ctx.request.POST.get("username", "").strip()
        password = ctx.request.POST.get("password", "")
        realm = ctx.realm

        def fail(error, user=None):
            ctx.login_error(error, user=user, username=username)
            # One message for every failure: nothing tells an attacker which part was wrong.
            return Outcome.failure(error, self.page(ctx, username=username, error=GENERIC_LOGIN_ERROR))

        user = find_user(realm, username) if username else None
        if user is None:
            spend_check_time(password)
            return fail("user_not_found")
        locked = bruteforce.is_locked(realm, user)
        valid = user.check_password(password)
        if not user.enabled:
            return fail("user_disabled", user)
        if locked:
            return fail("user_temporarily_disabled", user)
        if not valid:
            bruteforce.record_failure(realm, user, ctx.ip_address)
            return fail("invalid_user_credentials", user)
        bruteforce.record_success(realm, user)
        ctx.set_user(user)
        ctx.add_auth_method("pwd")
        ctx.auth_session.remember_me = realm.remember_me and ctx.request.POST.get("rememberMe") == "on"
        return Outcome.success()

    def configured_for(self, ctx, user):
        return user.has_usable_password()


@register_authenticator
class UserConfiguredCondition(Authenticator):
    """Keycloak's ``conditional-user-configured``: the conditional sub-flow runs when the user
    has what its steps need (all REQUIRED steps, else any ALTERNATIVE one)."""

    provider_id = "conditional-user-configured"
    display_name = "Condition - user configured"
    is_condition = True

    def matches(self, ctx, flow):
        user = ctx.user
        if user is None:
            return False
        _, required, alternatives = execution_levels(flow)
        if required:
            return all(is_configured(ctx, e, user) for _, e in required)
        return any(is_configured(ctx, e, user) for _, e in alternatives)
