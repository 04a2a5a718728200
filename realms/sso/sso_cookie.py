"""The ``SERVICE_IDENTITY`` cookie: the browser's handle on its SSO session in one realm.

It carries the session id signed with the server's key (salted per realm), so a cookie cannot
be forged or moved to another realm; the session itself is checked on every use
(``realms.sso.sessions.get_valid_session``). HttpOnly, SameSite=Lax, Secure over https, and scoped
to ``/realms/<realm>/`` so realms do not see each other's cookies.

Beside it, ``SERVICE_SESSION`` (Keycloak's ``KEYCLOAK_SESSION``) is readable by script: the
OIDC check-session iframe compares it with the ``session_state`` its client holds. It carries only
the SHA-256 of the session id (base64url, as Keycloak 26.1+), never anything that signs in, and
is SameSite=None over https so the iframe sees it when framed by another site.
"""
import base64
import hashlib

from django.core import signing

from . import sessions

COOKIE = "SERVICE_IDENTITY"
SESSION_STATE_COOKIE = "SERVICE_SESSION"


def _signer(realm):
    return signing.Signer(salt=f"idp.sso-cookie:{realm.pk}")


def path(realm):
    return f"/realms/{realm.name}/"


def session_id(request, realm):
    """The SSO session id the request's cookie names (its signature checked), or None; whether
    that session is live is ``session_from_request``'s question."""
    value = request.COOKIES.get(COOKIE)
    if not value:
        return None
    try:
        return _signer(realm).unsign(value)
    except signing.BadSignature:
        return None


def session_from_request(request, realm):
    """The live SSO session named by the request's cookie, or None."""
    return sessions.get_valid_session(realm, session_id(request, realm))


def set_cookie(response, request, realm, user_session):
    # A remember-me session outlives the browser; otherwise the cookie ends with the browser.
    max_age = None
    if user_session.remember_me:
        max_age = sessions.session_max_lifespan(realm, user_session)
    response.set_cookie(COOKIE, _signer(realm).sign(user_session.pk), max_age=max_age, path=path(realm),
                        httponly=True, secure=request.is_secure(), samesite="Lax")
    # Browsers refuse SameSite=None without Secure: over http it falls back to Lax.
    response.set_cookie(SESSION_STATE_COOKIE, session_state_hash(user_session.pk), max_age=max_age,
                        path=path(realm), httponly=False, secure=request.is_secure(),
                        samesite="None" if request.is_secure() else "Lax")
    return response


def session_state_hash(session_id):
    digest = hashlib.sha256(str(session_id).encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def clear_cookie(response, realm):
    response.delete_cookie(COOKIE, path=path(realm), samesite="Lax")
    response.delete_cookie(SESSION_STATE_COOKIE, path=path(realm), samesite="Lax")
    return response
