"""The ``SERVICE_IDENTITY`` cookie: the browser's handle on its SSO session in one realm.

It carries the session id signed with the server's key (salted per realm), so a cookie cannot
be forged or moved to another realm; the session itself is checked on every use
(``realms.sessions.get_valid_session``). HttpOnly, SameSite=Lax, Secure over https, and scoped
to ``/realms/<realm>/`` so realms do not see each other's cookies.
"""
from django.core import signing

from . import sessions

COOKIE = "SERVICE_IDENTITY"


def _signer(realm):
    return signing.Signer(salt=f"idp.sso-cookie:{realm.pk}")


def path(realm):
    return f"/realms/{realm.name}/"


def session_from_request(request, realm):
    """The live SSO session named by the request's cookie, or None."""
    value = request.COOKIES.get(COOKIE)
    if not value:
        return None
    try:
        session_id = _signer(realm).unsign(value)
    except signing.BadSignature:
        return None
    return sessions.get_valid_session(realm, session_id)


def set_cookie(response, request, realm, user_session):
    # A remember-me session outlives the browser; otherwise the cookie ends with the browser.
    max_age = None
    if user_session.remember_me:
        max_age = sessions.session_max_lifespan(realm, user_session)
    response.set_cookie(COOKIE, _signer(realm).sign(user_session.pk), max_age=max_age, path=path(realm),
                        httponly=True, secure=request.is_secure(), samesite="Lax")
    return response


def clear_cookie(response, realm):
    response.delete_cookie(COOKIE, path=path(realm), samesite="Lax")
    return response
