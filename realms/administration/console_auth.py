"""The admin console's sign-in. The console is a client of each realm (Keycloak's
``security-admin-console``): the master realm's admins sign in through the master realm's
browser flow, a realm's own admins through their realm's, like any other sign-in of that realm,
so one-time codes, passkeys, required actions, brute-force detection and the password policy
apply to admins too (docs/decisions/0063).

- ``start`` opens a sign-in of the realm's console client on the browser binding (the realm's
  flow, or the client's override); the engine shows the login page, or answers at once from the
  realm's SSO session.
- The ``console`` login protocol (``register``, from RealmsConfig.ready) ends it: on success
  the Django session is signed in as the user and remembers the SSO session (what the user may
  then do is ``admin_permissions``); on failure an error page.
- ``session_alive``: the console's session lasts as long as that SSO session (every console page
  asks); ``sign_out`` ends both, as Keycloak's console logout does.
- ``ConsoleBackend`` is Django's session back end: it reads the signed-in user and checks no
  password (the console has no password form)."""
from django.contrib import auth
from django.contrib.auth.backends import BaseBackend
from django.http import HttpResponseRedirect

from ..audit import events
from ..data import realm_cache
from ..http import themes
from ..http.web import client_address
from ..models import User
from ..signin import engine
from ..sso import auth_sessions, sessions, sso_cookie
from .admin_permissions import CONSOLE_CLIENT

PROTOCOL = "console"
BACKEND = "realms.administration.console_auth.ConsoleBackend"
SSO_SESSION = "console_sso_session"  # Django session key: [realm id, SSO session id]


def start(request, realm_name, redirect_uri):
    """The first answer of a console sign-in to ``realm_name`` that ends at ``redirect_uri`` (a
    console path the caller checked). 404 for an unknown or disabled realm."""
    config = realm_cache.get_realm(realm_name)
    realm, client = config.realm, config.client(CONSOLE_CLIENT)
    if client is None or not client.enabled:
        key = "clientNotFoundMessage" if client is None else "clientDisabledMessage"
        return themes.render(request, realm, "info.html", {"is_error": True, "message_key": key}, status=400)
    auth_session = auth_sessions.start(request, realm, client, protocol=PROTOCOL,
                                       client_data={"redirect_uri": redirect_uri})
    return engine.advance(request, realm, client, auth_session)


def _complete(ctx, user_session):
    request, user = ctx.request, ctx.user
    redirect_uri = ctx.auth_session.client_data["redirect_uri"]
    client_session = sessions.get_or_create_client_session(user_session, ctx.client, redirect_uri=redirect_uri)
    sessions.touch(user_session, client_session)
    auth.login(request, user, backend=BACKEND)
    request.session[SSO_SESSION] = [ctx.realm.pk, user_session.pk]
    events.emit(ctx.realm, "LOGIN", client_id=ctx.client.client_id, user_id=user.pk, session_id=user_session.pk,
                ip_address=ctx.ip_address, details={"auth_method": PROTOCOL, "redirect_uri": redirect_uri,
                                                    "username": user.username})
    # Whether the user administers anything is the console's question on the page it lands on.
    return HttpResponseRedirect(redirect_uri)


def _fail(ctx, error):
    redirect_uri = ctx.auth_session.client_data["redirect_uri"]
    events.emit(ctx.realm, "LOGIN_ERROR", client_id=ctx.client.client_id, ip_address=ctx.ip_address,
                user_id=ctx.auth_session.user_id, error=error, details={"redirect_uri": redirect_uri})
    # Back to the console, which starts a new sign-in.
    return ctx.render("info.html", {"is_error": True, "message_key": "invalidCodeMessage", "back_url": redirect_uri},
                      status=400)


def register():
    """Called from RealmsConfig.ready."""
    engine.register_protocol(PROTOCOL, _complete, _fail, listed=False)


def session_alive(request):
    """Whether the SSO session the console signed in with still holds, its idle timer reset by
    this use; when it has ended (signed out elsewhere, idle, past its lifespan) the console's
    session ends with it, as Keycloak's console loses its tokens. A Django session without one
    (opened before this sign-in existed, or by a test's ``force_login``) keeps its own expiry."""
    held = request.session.get(SSO_SESSION)
    if held is None or not request.user.is_authenticated:
        return True
    realm = request.user.realm
    user_session = sessions.get_valid_session(realm, held[1]) if held[0] == realm.pk else None
    if user_session is None or user_session.user_id != request.user.pk:
        auth.logout(request)
        return False
    sessions.touch(user_session)
    return True


def sign_out(request, response):
    """End the Django session and the SSO session its sign-in left (its cookie cleared on
    ``response``). The realm of the user who was signed in, or None."""
    user = request.user if request.user.is_authenticated else None
    held = request.session.get(SSO_SESSION)
    auth.logout(request)
    if user is None:
        return None
    realm = user.realm
    if held and held[0] == realm.pk:
        user_session = sessions.get_valid_session(realm, held[1])
        if user_session is not None and user_session.user_id == user.pk:
            sessions.end_session(user_session, reason=sessions.REASON_LOGOUT)
            events.emit(realm, "LOGOUT", client_id=CONSOLE_CLIENT, user_id=user.pk, session_id=user_session.pk,
                        ip_address=client_address(request))
        sso_cookie.clear_cookie(response, realm)
    return realm


class ConsoleBackend(BaseBackend):
    def get_user(self, user_id):
        return User.objects.select_related("realm").filter(pk=user_id).first()

