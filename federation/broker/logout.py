"""Logout with an OpenID Connect provider, both ways.

* Ours to the provider: the browser goes to the provider's ``logoutUrl`` (its end_session
  endpoint) with ``id_token_hint`` (``sendIdTokenOnLogout``, on by default), ``client_id``
  (``sendClientIdOnLogout``), ``post_logout_redirect_uri`` (the broker's ``logout_response``) and
  ``state``; or, where ``backchannelSupported``, our server calls the same URL itself as Keycloak
  does (a GET with ``state``, ``id_token_hint`` and ``client_id`` as configured).
* The provider's to us (OpenID Connect Back-Channel Logout 1.0): it POSTs a ``logout_token`` to
  ``/broker/{alias}/endpoint/backchannel_logout``. The token is checked as §2.6 says (signature
  with the provider's keys, ``iss``, ``aud``, ``iat``, a ``jti`` not seen before, the
  back-channel logout event, ``sid`` or ``sub``, no ``nonce``), then every SSO session signed in
  through that provider with that ``sid`` (and ``sub``) ends. The provider asked, so it is not
  told back. A ``keycloak-oidc`` provider may instead use Keycloak's own back-channel logout (a
  signed LogoutAction POSTed to ``endpoint/k_logout``), naming its session ids."""
import json
import logging
import time
from urllib.parse import parse_qs, urlencode, urlsplit

from django.core.cache import cache
from django.db import transaction
from django.http import HttpResponse

from realms.audit import events
from realms.brokering.broker import SESSION_IDP
from realms.brokering.providers import BrokerError
from realms.http.web import client_address
from realms.models import UserSession
from realms.sso import sessions

from . import client, jose

logger = logging.getLogger("idp.broker")

BACKCHANNEL_PATH = "backchannel_logout"
EVENT = "http://schemas.openid.net/event/backchannel-logout"
ID_TOKEN_NOTE, SUB_NOTE, SID_NOTE = "FEDERATED_ID_TOKEN", "FEDERATED_SUB", "FEDERATED_SID"
_JTI_KEY = "idp:broker-logout-jti:"
JTI_TTL = 3600  # seconds a logout token's jti is remembered (longer than any token's lifetime here)


def _params(settings, notes, state):
    params = {"state": state} if state else {}
    if settings.send_id_token_on_logout and notes.get(ID_TOKEN_NOTE):
        params["id_token_hint"] = notes[ID_TOKEN_NOTE]
    if settings.flag("sendClientIdOnLogout"):
        params["client_id"] = settings.get("clientId")
    return params


def logout_url(settings, notes, return_url):
    """The provider's end_session URL sending the browser back to ``return_url``; "" without a
    ``logoutUrl`` or when the provider is told server to server. The state sent is the one
    ``return_url`` carries, so the provider's echo of it names the same logout."""
    url = settings.get("logoutUrl")
    if not url or settings.flag("backchannelSupported"):
        return ""  # Keycloak: a provider with back-channel logout is told server to server instead
    parts = urlsplit(return_url)
    state = parse_qs(parts.query).get("state", [""])[0]
    # Registered redirect URIs match exactly: the provider gets the bare URI and echoes state on it.
    bare = parts._replace(query="", fragment="").geturl()
    params = {**_params(settings, notes, state), "post_logout_redirect_uri": bare}
    return url + ("&" if "?" in url else "?") + urlencode(params)


def backchannel_logout(settings, notes):
    """Our server ends the provider's session itself (Keycloak's backchannelLogout: a GET)."""
    url = settings.get("logoutUrl")
    if not url:
        return
    params = _params(settings, notes, notes.get(SID_NOTE, ""))
    status, _, _ = client.call("GET", url + ("&" if "?" in url else "?") + urlencode(params))
    if status >= 400:
        raise BrokerError(error="logout_failed", detail=f"the provider's logout endpoint answered {status}")


def _refused(detail):
    body = json.dumps({"error": "invalid_request", "error_description": detail})
    answer = HttpResponse(body, status=400, content_type="application/json")
    answer["Cache-Control"] = "no-store"
    return answer


def check_logout_token(token, settings):
    """The claims of a logout token once OpenID Back-Channel Logout 1.0 §2.6 holds."""
    if not settings.get("issuer"):
        raise jose.invalid("the provider has no issuer configured to check logout tokens against")
    if str(jose.header_of(token).get("alg", "")).lower() == "none":
        raise jose.invalid("unsigned tokens (alg none) are not accepted")
    claims = jose.verify(token, settings)  # always verified: nothing else vouches for a POSTed token
    jose.check_issuer_audience(claims, settings)
    if not isinstance(claims.get("iat"), (int, float)):
        raise jose.invalid("the logout token has no iat")
    jose.check_lifetime(claims, settings.clock_skew, require_exp=False)
    if not isinstance(claims.get("jti"), str) or not claims["jti"]:
        raise jose.invalid("the logout token has no jti")
    token_events = claims.get("events")
    if not isinstance(token_events, dict) or not isinstance(token_events.get(EVENT), dict):
        raise jose.invalid("the logout token has no back-channel logout event")
    if "nonce" in claims:
        raise jose.invalid("a logout token must not carry a nonce")
    sid, sub = claims.get("sid"), claims.get("sub")
    if not (isinstance(sid, str) and sid) and not (isinstance(sub, str) and sub):
        raise jose.invalid("the logout token names neither sid nor sub")
    # Used once: remembered by issuer and jti (add is atomic: a replay finds it there).
    if not cache.add(_JTI_KEY + f"{claims.get('iss')}:{claims['jti']}", 1, JTI_TTL):
        raise jose.invalid("the logout token was already used")
    return claims


def _sessions(realm, idp, claims):
    found = UserSession.objects.filter(realm=realm, **{f"notes__{SESSION_IDP}": idp.alias})
    if isinstance(claims.get("sid"), str) and claims["sid"]:
        found = found.filter(**{f"notes__{SID_NOTE}": claims["sid"]})
    if isinstance(claims.get("sub"), str) and claims["sub"]:
        found = found.filter(**{f"notes__{SUB_NOTE}": claims["sub"]})
    return list(found)


def _end(request, realm, idp, found):
    for user_session in found:
        user_session.notes = {**(user_session.notes or {}), SESSION_IDP: ""}  # not told back
        with transaction.atomic():
            sessions.end_session(user_session, reason=sessions.REASON_LOGOUT)
            events.emit(realm, "LOGOUT", user_id=user_session.user_id, session_id=user_session.pk,
                        ip_address=client_address(request), details={"identity_provider": idp.alias})


def backchannel_request(request, realm, idp, settings):
    """The provider's back-channel logout: 200 when the token holds (whether or not a session was
    still there), 400 with the reason otherwise."""
    if request.method != "POST":
        return _refused("a back-channel logout is a POST")
    token = request.POST.get("logout_token", "")
    if not token or len(request.POST.getlist("logout_token")) != 1:
        return _refused("logout_token is required")
    try:
        claims = check_logout_token(token, settings)
    except BrokerError as exc:
        logger.info("realm %s: identity provider %s: logout token refused: %s", realm.name, idp.alias, exc.detail)
        return _refused(exc.detail or exc.error)
    _end(request, realm, idp, _sessions(realm, idp, claims))
    answer = HttpResponse(status=200)
    answer["Cache-Control"] = "no-store"
    return answer


K_LOGOUT_PATH = "k_logout"


def keycloak_logout_request(request, realm, idp, settings):
    """``keycloak-oidc``: another Keycloak's own back-channel logout (its admin URL's
    ``k_logout``): a LogoutAction signed with its realm key, for our client (``resource``), not
    expired, naming the upstream sessions (``keycloakSessionIds``) whose sessions here end."""
    if request.method != "POST":
        return _refused("a back-channel logout is a POST")
    token = request.body.decode(errors="replace").strip()
    try:
        if str(jose.header_of(token).get("alg", "")).lower() == "none":
            raise jose.invalid("unsigned tokens (alg none) are not accepted")
        action = jose.verify(token, settings)
        if action.get("action") != "LOGOUT":
            raise jose.invalid("not a logout action")
        expiration = action.get("expiration") or 0
        if not isinstance(expiration, (int, float)) or (expiration and expiration < time.time()):
            raise jose.invalid("Logout action has expired.")
        if action.get("resource") != settings.get("clientId"):
            raise jose.invalid("Logout token audience is incorrect")
    except BrokerError as exc:
        logger.info("realm %s: identity provider %s: k_logout refused: %s", realm.name, idp.alias, exc.detail)
        return _refused(exc.detail or exc.error)
    ids = [i for i in action.get("keycloakSessionIds") or [] if isinstance(i, str)]
    if ids:
        _end(request, realm, idp, UserSession.objects.filter(
            realm=realm, **{f"notes__{SESSION_IDP}": idp.alias, f"notes__{SID_NOTE}__in": ids}))
    return HttpResponse(status=200)
