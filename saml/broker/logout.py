"""Single logout with an upstream SAML identity provider, both ways (Keycloak's SAMLIdentityProvider
and SAMLEndpoint).

* Ours first, through the browser: ``logout_url`` builds a LogoutRequest (signed with
  ``wantAuthnRequestsSigned``) naming the NameID and SessionIndex the sign-in left on the SSO
  session, to ``singleLogoutServiceUrl`` by ``postBindingLogout``. Its RelayState is the broker's
  logout state; the provider's LogoutResponse comes back to the broker endpoint (our metadata's
  SingleLogoutService), is checked (signature, Destination, Issuer, InResponseTo = our request's
  ID) and goes on to the broker's ``endpoint/logout_response``, which ends our logout.
* Ours, server to server: with ``backchannelSupported``, Keycloak posts the LogoutRequest as a
  form (``SAMLRequest``, ``RelayState`` = the session id) to the SLO URL instead; the browser then
  does not go there (``logout_url`` answers "").
* Theirs: a LogoutRequest at the broker endpoint (checked like any message) ends every SSO session
  signed in through this provider with that NameID (and one of its SessionIndexes, when it names
  any), without telling the provider back, and answers a LogoutResponse to the SLO URL.
"""
import logging
import secrets
from urllib.parse import parse_qs, urlencode, urlsplit

from django.core.cache import cache
from django.db import transaction
from django.http import HttpResponseRedirect

from realms.audit import events
from realms.brokering.broker import SESSION_IDP, endpoint_url
from realms.data.crypto import constant_time_equals
from realms.http import outbound as outbound_http
from realms.http import themes
from realms.http.messages import Message
from realms.http.web import client_address, realm_url
from realms.models import UserSession
from realms.sso import sessions, sso_cookie

from .. import builders, inbound, outbound, signatures, xml
from .. import constants as c
from ..errors import UntrustedRequest
from . import config as saml_config
from .response import check_issuer, verify, verify_query

logger = logging.getLogger("idp.broker")

NOTE_NAME_ID = "SAML_FEDERATED_SUBJECT_NAME_ID"
NOTE_SUBJECT = "SAML_FEDERATED_SUBJECT"
NOTE_SESSION_INDEX = "SAML_FEDERATED_SESSION_INDEX"
NOTE_ISSUER = "SAML_FEDERATED_ISSUER"
POST_STEP = "logout-post"  # our page that posts a LogoutRequest (POST binding) to the provider
_KEY = "idp:saml-broker-logout:"
_TTL = 600
BACKCHANNEL_TIMEOUT, BACKCHANNEL_CONNECT_TIMEOUT = 3.0, 2.0


def _entity_id(request, realm, settings, notes):
    return notes.get(NOTE_ISSUER) or settings.entity_id(realm_url(request, realm.name))


def _logout_request(settings, notes, issuer, url):
    stored = xml.parse(notes[NOTE_NAME_ID].encode())
    element = builders.logout_request(issuer=issuer, destination=url, name_id=(stored.text or "").strip(),
                                      name_id_format=stored.get("Format"), session_index=notes.get(NOTE_SESSION_INDEX))
    name_id = element.find(f"{{{c.NS_SAML}}}NameID")
    for qualifier in ("NameQualifier", "SPNameQualifier", "SPProvidedID"):
        if stored.get(qualifier):  # the NameID exactly as the provider gave it (core §3.7.1)
            name_id.set(qualifier, stored.get(qualifier))
    return element


def logout_url(request, realm, idp, notes, return_url):
    settings = saml_config.Settings(idp)
    url = settings.config.get("singleLogoutServiceUrl", "")
    if not url or settings.flag("backchannelSupported") or not notes.get(NOTE_NAME_ID):
        return ""
    state = parse_qs(urlsplit(return_url).query).get("state", [""])[0]
    element = _logout_request(settings, notes, _entity_id(request, realm, settings, notes), url)
    sign = settings.flag("wantAuthnRequestsSigned")
    kept = {"id": element.get("ID")}
    if settings.post_binding_logout:
        if sign:
            element = outbound.sign_with(realm, element, algorithm=settings.algorithm,
                                         transformer=settings.key_name_transformer)
        kept["form"] = [url, [("SAMLRequest", xml.encode_post(xml.serialize(element))), ("RelayState", state)]]
        target = f"{endpoint_url(request, realm, idp.alias)}/{POST_STEP}?" + urlencode({"state": state})
    else:
        target = outbound.signed_redirect_url(realm, url, "SAMLRequest", element, state, sign=sign,
                                              algorithm=settings.algorithm)
    cache.set(_KEY + state, kept, _TTL)
    return target


def post_step(request, realm, idp):
    """The page that posts a kept LogoutRequest to the provider (POST binding)."""
    kept = cache.get(_KEY + request.GET.get("state", "")) or {}
    if request.method != "GET" or "form" not in kept:
        return themes.render(request, realm, "error.html", {"message": Message("expiredActionMessage")}, status=400)
    url, fields = kept["form"]
    return themes.render(request, realm, "form-post.html", {"action": url, "fields": [tuple(f) for f in fields]})


def _read(request, realm, idp, params, binding, param, kind):
    """A checked LogoutRequest or LogoutResponse from the provider (its signature when
    ``validateSignature``: XML in POST, the query string in Redirect)."""
    settings = saml_config.Settings(idp)
    if len(params.getlist(param)) > 1 or len(params.getlist("RelayState")) > 1:
        raise UntrustedRequest(f"Duplicated parameter: {param}")
    raw = xml.decode_redirect(params[param]) if binding == c.BINDING_REDIRECT else xml.decode_post(params[param])
    root = xml.parse(raw)
    if root.tag != f"{{{c.NS_SAMLP}}}{kind}":
        raise UntrustedRequest("Unexpected SAML message.")
    signed = False
    if settings.flag("validateSignature"):
        allow_sha1 = settings.algorithm == "RSA_SHA1"
        if binding == c.BINDING_REDIRECT:
            verify_query(request.META.get("QUERY_STRING", ""), param, settings.certificates(), allow_sha1)
        elif signatures.has_signature(root):
            root = verify(root, settings.certificates(), allow_sha1)
        else:
            raise UntrustedRequest("Missing signature.", "invalid_signature")
        signed = True
    inbound.check_header(root, signed=signed, binding=binding,
                         endpoint_url=endpoint_url(request, realm, idp.alias))
    check_issuer(root, settings.config.get("idpEntityId", ""), required=False)
    return root


def _refused(request, realm, idp, exc, event_type="LOGOUT_ERROR"):
    logger.info("realm %s: identity provider %s: logout message refused: %s", realm.name, idp.alias, exc.message)
    events.emit(realm, event_type, error=exc.event_error, ip_address=client_address(request),
                details={"identity_provider": idp.alias, "reason": exc.message})
    return themes.render(request, realm, "error.html", {"message": Message("invalidRequesterMessage")}, status=400)


def handle_response(request, realm, idp, params, binding):
    """The provider's LogoutResponse to ours: checked, then on to the broker's logout end."""
    state = params.get("RelayState", "")
    kept = cache.get(_KEY + state) if state else None
    try:
        root = _read(request, realm, idp, params, binding, "SAMLResponse", "LogoutResponse")
        answered = root.get("InResponseTo", "")
        if kept is None or not answered or not constant_time_equals(answered, kept["id"]):
            raise UntrustedRequest("The logout answer is not for our request (InResponseTo).")
    except UntrustedRequest as exc:
        return _refused(request, realm, idp, exc)
    cache.delete(_KEY + state)
    status = root.find(f"{{{c.NS_SAMLP}}}Status/{{{c.NS_SAMLP}}}StatusCode")
    if status is None or status.get("Value") != c.STATUS_SUCCESS:
        logger.warning("realm %s: identity provider %s did not confirm the logout", realm.name, idp.alias)
    return HttpResponseRedirect(f"{endpoint_url(request, realm, idp.alias)}/logout_response?"
                                + urlencode({"state": state}))


def _sessions(realm, idp, name_id, indexes):
    found = UserSession.objects.filter(realm=realm, **{f"notes__{SESSION_IDP}": idp.alias,
                                                       f"notes__{NOTE_SUBJECT}": name_id})
    if indexes:
        found = found.filter(**{f"notes__{NOTE_SESSION_INDEX}__in": indexes})
    return list(found)


def handle_request(request, realm, idp, params, binding):
    """An IdP-initiated LogoutRequest: the sessions it names end; a LogoutResponse answers."""
    settings = saml_config.Settings(idp)
    try:
        root = _read(request, realm, idp, params, binding, "SAMLRequest", "LogoutRequest")
        check_issuer(root, settings.config.get("idpEntityId", ""), required=True)
    except UntrustedRequest as exc:
        return _refused(request, realm, idp, exc)
    name_id_el = root.find(f"{{{c.NS_SAML}}}NameID")
    name_id = (name_id_el.text or "").strip() if name_id_el is not None else ""
    indexes = [(el.text or "").strip() for el in root.findall(f"{{{c.NS_SAMLP}}}SessionIndex") if el.text]
    ended = _sessions(realm, idp, name_id, indexes) if name_id else []
    for user_session in ended:
        # The provider asked: it is not told back (Keycloak's backchannelLogout without the broker).
        user_session.notes = {**(user_session.notes or {}), SESSION_IDP: ""}
        with transaction.atomic():
            sessions.end_session(user_session, reason=sessions.REASON_LOGOUT)
            events.emit(realm, "LOGOUT", user_id=user_session.user_id, session_id=user_session.pk,
                        ip_address=client_address(request), details={"identity_provider": idp.alias})
    url = settings.config.get("singleLogoutServiceUrl", "")
    if url:
        element = builders.logout_response(issuer=settings.entity_id(realm_url(request, realm.name)), destination=url,
                                           in_response_to=root.get("ID"))
        answer = outbound.send(request, realm, url=url, binding=c.BINDING_POST if settings.post_binding_logout
                               else c.BINDING_REDIRECT, param="SAMLResponse", element=element,
                               relay_state=params.get("RelayState", ""), sign=settings.flag("wantAuthnRequestsSigned"),
                               algorithm=settings.algorithm, transformer=settings.key_name_transformer)
    else:
        answer = themes.render(request, realm, "logged-out.html")
    if ended and request.COOKIES.get(sso_cookie.COOKIE) and sso_cookie.session_from_request(request, realm) is None:
        answer = sso_cookie.clear_cookie(answer, realm)
    return answer


def backchannel_logout(realm, idp, notes):
    """Keycloak's back-channel broker logout: the LogoutRequest posted as a form, server to
    server, through the SSRF-safe client. A failure is logged, never raised."""
    settings = saml_config.Settings(idp)
    url = settings.config.get("singleLogoutServiceUrl", "")
    if not url or not settings.flag("backchannelSupported") or not notes.get(NOTE_NAME_ID):
        return
    element = _logout_request(settings, notes, _entity_id(None, realm, settings, notes), url)
    if settings.flag("wantAuthnRequestsSigned"):
        element = outbound.sign_with(realm, element, algorithm=settings.algorithm,
                                     transformer=settings.key_name_transformer)
    body = urlencode({"SAMLRequest": xml.encode_post(xml.serialize(element)), "RelayState": secrets.token_urlsafe(16)})
    try:
        answer = outbound_http.post(url, body.encode(), {"Content-Type": "application/x-www-form-urlencoded"},
                                    timeout=BACKCHANNEL_TIMEOUT, connect_timeout=BACKCHANNEL_CONNECT_TIMEOUT)
        if not 200 <= answer.status < 400:
            logger.warning("realm %s: back-channel logout at %s answered HTTP %s", realm.name, idp.alias, answer.status)
    except (outbound_http.TargetRefused, outbound_http.HTTPError, outbound_http.OutboundError, ValueError) as exc:
        logger.warning("realm %s: back-channel logout at %s failed: %s", realm.name, idp.alias, exc.__class__.__name__)
