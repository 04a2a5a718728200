"""Keycloak's ``auth-cookie`` step."""
from ...sso import sso_cookie
from .. import loa
from ..flows import SSO_AUTH, Authenticator, Outcome

REAUTHENTICATION = "FORCED_REAUTHENTICATION"  # Keycloak's note: the user is known, their proof asked again


class CookieAuthenticator(Authenticator):
    """An existing SSO session (cookie ``SERVICE_IDENTITY``) signs the user in without a form,
    unless the client asked to re-authenticate (prompt=login, max_age exceeded) or, in a flow
    with levels of authentication, asked for a level the session has not reached in time: then
    the user is known and the flow goes on to the steps of the missing levels (step-up)."""

    provider_id = "auth-cookie"
    display_name = "Cookie"

    def authenticate(self, ctx):
        user_session = sso_cookie.session_from_request(ctx.request, ctx.realm)
        if user_session is None:
            return Outcome.attempted()
        if ctx.auth_session.force_login:
            # Keycloak's re-authentication: the session's user is the one to prove themselves
            # again, shown fixed on the login form. After "Restart login" (the note kept, the
            # user cleared) the form asks for any user, who then replaces the session.
            if REAUTHENTICATION not in ctx.auth_session.notes:
                ctx.set_user(user_session.user)
                ctx.auth_session.notes[REAUTHENTICATION] = "true"
            return Outcome.attempted()
        ctx.set_user(user_session.user)
        ctx.user_session = user_session
        ctx.auth_session.sso_session_id = user_session.pk
        levels = loa.flow_levels(ctx.flow)
        if levels:
            previous = (user_session.notes or {}).get(loa.LOA_MAP)
            if previous:
                ctx.auth_session.notes[loa.LOA_MAP] = dict(previous)
            highest = loa.highest_reached(ctx.auth_session, levels)
            # The session's level counts for this sign-in either way; when below the request,
            # the flow goes on to the missing levels.
            loa.set_current(ctx.auth_session, highest)
            if loa.requested(ctx.auth_session) > highest:
                return Outcome.attempted()
        ctx.auth_session.notes[SSO_AUTH] = "true"
        return Outcome.success()
