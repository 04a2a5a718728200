"""Keycloak's ``auth-cookie`` step."""
from .. import sso_cookie
from ..flows import SSO_AUTH, Authenticator, Outcome


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
