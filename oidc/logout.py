"""RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0) and front-channel logout.

``id_token_hint`` is verified with the realm's keys (an expired ID token is accepted: logging out
is exactly what one does with an old session). ``post_logout_redirect_uri`` must match one of the
client's registered post-logout redirect URIs, and a client must be known (from the hint or
``client_id``) to use one. Without a hint the user confirms on a page first, so that a foreign
site cannot sign users out with a link. Ending the session tells the other clients: back-channel
by ``oidc.backchannel`` (on the ``session_ended`` signal), front-channel by the page returned
here, which loads each client's ``frontchannel.logout.url`` in an iframe with ``iss`` and
``sid``.

Keycloak's older API logout stays beside it: a POST with ``refresh_token`` and the client's
credentials (python-keycloak, keycloak-connect, Spring) ends the token's session, or its offline
session for an offline token, and answers 204 (``logout_by_refresh_token``).
"""
from dataclasses import dataclass, field

from django.core import signing
from django.db import transaction
from django.http import HttpResponseRedirect

from realms.audit import events
from realms.brokering import broker
from realms.http import themes
from realms.http.messages import Message
from realms.http.redirects import is_valid_redirect_uri, with_params
from realms.http.web import client_address, realm_url
from realms.sso import sessions, sso_cookie

from . import tokens
from .client_auth import authenticate
from .errors import InvalidClient, InvalidRequest, OAuthError, OidcError
from .grants import refresh_token_claims

CONFIRM_SALT = "idp.logout-confirm"
CONFIRM_MAX_AGE = 600
_NO_LIFETIME_LIMIT = 10 ** 10


class LogoutError(OidcError):
    """A bad logout request: shown on a page (never redirected to an unchecked URI)."""

    def __init__(self, message):
        super().__init__(message)
        self.message = message


@dataclass
class LogoutRequest:
    client: object = None
    user_session: object = None
    post_logout_redirect_uri: str = ""
    state: str = ""
    has_hint: bool = False
    fields: dict = field(default_factory=dict)


def post_logout_redirect_uris(client):
    """The client's registered post-logout redirect URIs: attribute ``post.logout.redirect.uris``
    (Keycloak separates entries with ``##``); ``+`` stands for the client's redirect URIs."""
    out = []
    for entry in (client.attributes.get("post.logout.redirect.uris") or "").split("##"):
        entry = entry.strip()
        if entry == "+":
            out.extend(client.redirect_uris or ())
        elif entry:
            out.append(entry)
    return out


def _verify_hint(realm, issuer, hint):
    try:
        claims = tokens.decode(realm, hint, issuer, leeway=_NO_LIFETIME_LIMIT)
    except tokens.TokenError as exc:
        raise LogoutError(Message("invalidIdTokenHintMessage")) from exc
    if claims.get("typ") != tokens.TYP_ID:
        raise LogoutError(Message("invalidIdTokenHintMessage"))
    return claims


def parse_logout_request(request, realm_config, issuer, params) -> LogoutRequest:
    realm = realm_config.realm
    hint = params.get("id_token_hint", "")
    client_id = params.get("client_id", "")
    claims = _verify_hint(realm, issuer, hint) if hint else None
    if claims is not None:
        hinted = claims.get("azp") or (claims.get("aud") if isinstance(claims.get("aud"), str) else "")
        if client_id and hinted and client_id != hinted:
            raise LogoutError(Message("logoutClientMismatchMessage"))
        client_id = client_id or hinted
    client = None
    if client_id:
        config = realm_config.client(client_id)
        if config is None or not config.client.enabled:
            raise LogoutError(Message("clientNotFoundMessage"))
        client = config.client
    redirect_uri = params.get("post_logout_redirect_uri", "")
    if redirect_uri:
        if client is None:
            raise LogoutError(Message("logoutMissingClientMessage"))
        if not is_valid_redirect_uri(post_logout_redirect_uris(client), redirect_uri):
            raise LogoutError(Message("invalidParameterMessage", "post_logout_redirect_uri"))

    user_session = sso_cookie.session_from_request(request, realm)
    if claims is not None:
        # The hint names the user as its client knows them (a pairwise sub for some clients).
        subject = config.subject if client is not None else str
        hinted_session = sessions.get_valid_session(realm, claims.get("sid", "")) if claims.get("sid") else None
        if hinted_session is not None and subject(hinted_session.user_id) == claims.get("sub"):
            user_session = hinted_session
        elif user_session is not None and subject(user_session.user_id) != claims.get("sub"):
            user_session = None  # the hint names someone else: do not sign out this browser's user
    return LogoutRequest(
        client=client, user_session=user_session, post_logout_redirect_uri=redirect_uri,
        state=params.get("state", ""), has_hint=claims is not None,
        fields={k: v for k, v in (("client_id", client_id), ("post_logout_redirect_uri", redirect_uri),
                                  ("state", params.get("state", ""))) if v},
    )


def confirmation_code(realm, user_session):
    return signing.dumps(user_session.pk, salt=f"{CONFIRM_SALT}:{realm.pk}")


def is_confirmed(realm, logout_request, params):
    """Whether the user confirmed this logout on our page (a signed code bound to the session)."""
    if logout_request.has_hint or logout_request.user_session is None:
        return True
    try:
        session_id = signing.loads(params.get("session_code", ""), salt=f"{CONFIRM_SALT}:{realm.pk}",
                                   max_age=CONFIRM_MAX_AGE)
    except signing.BadSignature:
        return False
    return session_id == logout_request.user_session.pk


def end_sso_session(request, realm, logout_request):
    """End the session (back-channel follows the signal); returns the front-channel URLs."""
    user_session = logout_request.user_session
    if user_session is None:
        return []
    with transaction.atomic():
        client_sessions = sessions.client_sessions_with_clients(user_session)  # read once for both
        frontchannel = sessions.frontchannel_logout_urls(request, user_session, client_sessions)
        sessions.end_session(user_session, reason=sessions.REASON_LOGOUT, client_sessions=client_sessions)
        events.emit(realm, "LOGOUT", client_id=logout_request.client.client_id if logout_request.client else "",
                    user_id=user_session.user_id, session_id=user_session.pk,
                    ip_address=client_address(request),
                    details={"redirect_uri": logout_request.post_logout_redirect_uri} if
                    logout_request.post_logout_redirect_uri else {})
    return frontchannel


def _frontchannel_url(request, user_session, client_session):
    """An OIDC client's ``frontchannel.logout.url`` with ``iss`` and ``sid`` (Front-Channel
    Logout 1.0 §2), whichever protocol started the logout."""
    client = client_session.client
    url = (client.attributes or {}).get("frontchannel.logout.url", "")
    if not (client.frontchannel_logout and url):
        return ""
    return with_params(url, {"iss": realm_url(request, user_session.realm.name), "sid": user_session.pk})


sessions.register_frontchannel_logout("openid-connect", _frontchannel_url)


def logout(request, realm_config, issuer, params):
    """The whole endpoint: a confirmation page, or the session ended and the browser sent on."""
    realm = realm_config.realm
    logout_request = parse_logout_request(request, realm_config, issuer, params)
    if not is_confirmed(realm, logout_request, params):
        return themes.render(request, realm, "logout-confirm.html", {
            "action": request.path, "fields": logout_request.fields,
            "session_code": confirmation_code(realm, logout_request.user_session),
        })
    frontchannel = end_sso_session(request, realm, logout_request)
    next_url = ""
    if logout_request.post_logout_redirect_uri:
        next_url = with_params(logout_request.post_logout_redirect_uri, {"state": logout_request.state})
    if logout_request.user_session is not None:
        # Signed in through an identity provider: its session ends too, on the way.
        next_url = broker.logout_redirect(request, realm, logout_request.user_session, next_url) or next_url
    if frontchannel:
        response = themes.render(request, realm, "frontchannel-logout.html",
                                 {"frames": frontchannel, "next_url": next_url})
    elif next_url:
        response = HttpResponseRedirect(next_url)
    else:
        response = themes.render(request, realm, "logged-out.html")
    return sso_cookie.clear_cookie(response, realm)


def logout_by_refresh_token(request, realm_config, issuer, params, ip_address, found):
    """Keycloak's logout by refresh token: the client authenticates as at the token endpoint and
    presents one of its refresh (or offline) tokens; that session ends. Raises OAuthError;
    ``found["config"]`` is the authenticated client (for CORS, also on errors). An expired token
    still signs out, as in Keycloak."""
    realm = realm_config.realm
    try:
        config, _ = authenticate(request, realm_config, params, allow_bearer_only=True,
                                 audiences=(issuer, f"{issuer}/protocol/openid-connect/token",
                                            f"{issuer}/protocol/openid-connect/logout"))
        found["config"] = config
        if config.client.bearer_only:
            raise InvalidClient("Bearer-only not allowed", status=400)
        token = params.get("refresh_token", "")
        if not token:
            raise InvalidRequest("No refresh token", event_error="invalid_token")
        claims = refresh_token_claims(realm, token, issuer, config.client_id, leeway=_NO_LIFETIME_LIMIT)
        typ = claims["typ"]
    except OAuthError as exc:
        config = found.get("config")
        events.emit(realm, "LOGOUT_ERROR", client_id=config.client_id if config else "",
                    ip_address=ip_address, error=exc.event_error, details={"reason": exc.description})
        raise
    user_session = sessions.get_valid_session(realm, claims.get("sid", ""))
    if (user_session is None or user_session.offline != (typ == tokens.TYP_OFFLINE)
            or config.subject(user_session.user_id) != claims.get("sub")):
        return  # already ended: nothing left to sign out (Keycloak answers 204 as well)
    with transaction.atomic():
        sessions.end_session(user_session, reason=sessions.REASON_LOGOUT)
        events.emit(realm, "LOGOUT", client_id=config.client_id, user_id=user_session.user_id,
                    session_id=user_session.pk, ip_address=ip_address)
