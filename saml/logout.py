"""Single logout (SAML profiles §4.4).

SP-initiated: a LogoutRequest (read and checked like any request) names the user by NameID and,
usually, the client session by SessionIndex (we issue the client session's id). The SSO session
ends (``realms.sso.sessions.end_session``), which tells every other client of the session:

* back-channel, on the ``session_ended`` signal after commit: OIDC clients with a back-channel
  logout URL (``oidc.backchannel``) and SAML clients with front-channel logout off, which get a
  signed LogoutRequest in a SOAP envelope at ``saml_single_logout_service_url_soap`` (or the
  admin URL, as Keycloak falls back to);
* front-channel, through the browser: a page loads each client's logout URL in an iframe
  (``realms.sso.sessions.frontchannel_logout_urls``: OIDC front-channel URLs and, for SAML clients,
  our own ``logout-step`` URL that sends their LogoutRequest by their binding), then continues
  to the requesting SP with its LogoutResponse.

An OIDC logout reaches the SAML clients the same two ways, since it ends the session through the
same function and builds its page from the same registry.
"""
import logging
from concurrent.futures import ThreadPoolExecutor

from django.core import signing
from django.db import transaction
from django.http import HttpResponseRedirect
from lxml import etree

from realms.audit import events
from realms.brokering import broker
from realms.http import outbound as outbound_http
from realms.http import themes
from realms.http.web import client_address, realm_url
from realms.models import ClientSession
from realms.sso import sessions, sso_cookie

from . import builders, clients, inbound, outbound
from . import constants as c
from .errors import UntrustedRequest
from .sso import NOTE_ISSUER, NOTE_NAME_ID, NOTE_NAME_ID_FORMAT

logger = logging.getLogger("idp.saml")

STEP_SALT = "idp.saml.logout-step"
STEP_MAX_AGE = 600
SOAP_CONNECT_TIMEOUT, SOAP_TIMEOUT = 2.0, 3.0


def _step_url(realm, payload):
    token = signing.dumps(payload, salt=f"{STEP_SALT}:{realm.pk}", compress=True)
    return f"/realms/{realm.name}/protocol/saml/logout-step?token={token}"


def _name_id_of(client_session):
    notes = client_session.notes or {}
    return notes.get(NOTE_NAME_ID, ""), notes.get(NOTE_NAME_ID_FORMAT, "")


# Front-channel --------------------------------------------------------------------------------

def _frontchannel_url(request, user_session, client_session):
    client = clients.SamlClient(client_session.client)
    url, _ = client.logout_endpoint()
    name_id, name_format = _name_id_of(client_session)
    if not (client.client.frontchannel_logout and url and name_id):
        return ""
    return _step_url(user_session.realm, {"k": "request", "c": client.client.pk, "n": name_id, "f": name_format,
                                          "s": client_session.pk})



def logout_step(request, realm, token):
    """One browser step of a logout: a LogoutRequest to a SAML client (inside an iframe of the
    logout page) or the final LogoutResponse to the SP that asked. The signed token says which."""
    try:
        payload = signing.loads(token, salt=f"{STEP_SALT}:{realm.pk}", max_age=STEP_MAX_AGE)
    except signing.BadSignature as exc:
        raise UntrustedRequest("This sign-out link has expired.") from exc
    client = clients.by_pk(realm, payload.get("c"))
    if client is None:
        raise UntrustedRequest("Unknown client.", "client_not_found")
    issuer = realm_url(request, realm.name)
    if payload.get("k") == "request":
        url, binding = client.logout_endpoint()
        if not url:
            raise UntrustedRequest("The client has no single logout service.")
        element = builders.logout_request(issuer=issuer, destination=url, name_id=payload["n"],
                                          name_id_format=payload["f"], session_index=payload["s"])
        relay_state = ""
    else:
        url, binding = payload["u"], payload["b"]
        element = builders.logout_response(issuer=issuer, destination=url, in_response_to=payload["r"])
        relay_state = payload.get("rs", "")
    return outbound.deliver(request, realm, client.client, url=url, binding=binding, param=(
        "SAMLRequest" if payload.get("k") == "request" else "SAMLResponse"), element=element,
        relay_state=relay_state, sign=client.flag(c.ATTR_SERVER_SIGNATURE))


# SP-initiated logout ----------------------------------------------------------------------------

def _session_to_end(request, realm, message):
    """(the user session the LogoutRequest names, its client sessions with their clients), or
    (None, []): by SessionIndex (a client session of this client), else the browser's SSO session
    if this client is part of it; the NameID must be the one this client was given. The named
    client sessions and their sessions' others are read in one statement: ending the session tells
    all of them."""
    client = message.client.client
    name_id_el = message.root.find(f"{{{c.NS_SAML}}}NameID")
    name_id = (name_id_el.text or "").strip() if name_id_el is not None else ""
    indexes = [(el.text or "").strip() for el in message.root.findall(f"{{{c.NS_SAMLP}}}SessionIndex")]
    in_sessions = ClientSession.objects.select_related("client")
    if indexes:
        read = in_sessions.filter(user_session__in=ClientSession.objects.filter(
            client=client, pk__in=indexes).values("user_session_id"))
    else:
        cookie_session = sso_cookie.session_from_request(request, realm)
        if cookie_session is None:
            return None, []
        read = in_sessions.filter(user_session=cookie_session)
    found = list(read)
    for client_session in found:
        if (client_session.client_id == client.pk and (not indexes or client_session.pk in indexes)
                and name_id and _name_id_of(client_session)[0] == name_id):
            user_session = sessions.get_valid_session(realm, client_session.user_session_id)
            if user_session is not None:
                return user_session, [s for s in found if s.user_session_id == user_session.pk]
    return None, []


def handle_logout_request(request, realm, message):
    client = message.client
    inbound.record_request_id(message)
    url, binding = client.logout_endpoint(prefer_binding=message.binding)
    user_session, client_sessions = _session_to_end(request, realm, message)
    frames = []
    if user_session is not None:
        with transaction.atomic():
            frames = sessions.frontchannel_logout_urls(request, user_session, client_sessions,
                                                       exclude_client=client.client)
            sessions.end_session(user_session, reason=sessions.REASON_LOGOUT, client_sessions=client_sessions)
            events.emit(realm, "LOGOUT", client_id=client.entity_id, user_id=user_session.user_id,
                        session_id=user_session.pk, ip_address=client_address(request),
                        details={"auth_method": c.PROTOCOL, "protocol": c.PROTOCOL, "redirect_uri": url or ""})
    next_url = _step_url(realm, {"k": "response", "c": client.client.pk, "u": url, "b": binding, "r": message.id,
                                 "rs": message.relay_state}) if url else ""
    # A session signed in through an identity provider: its session ends too, on the way back.
    through = broker.logout_redirect(request, realm, user_session, next_url) if user_session is not None else ""
    if not url and not through:
        response = themes.render(request, realm, "frontchannel-logout.html" if frames else "logged-out.html",
                                 {"frames": frames})
    elif frames:
        response = themes.render(request, realm, "frontchannel-logout.html", {"frames": frames,
                                                                             "next_url": through or next_url})
    elif through:
        response = HttpResponseRedirect(through)
    else:
        element = builders.logout_response(issuer=realm_url(request, realm.name), destination=url,
                                           in_response_to=message.id)
        response = outbound.deliver(request, realm, client.client, url=url, binding=binding, param="SAMLResponse",
                                    element=element, relay_state=message.relay_state,
                                    sign=client.flag(c.ATTR_SERVER_SIGNATURE))
    # By the id the cookie names: reading that session now would only find it gone.
    if user_session is not None and sso_cookie.session_id(request, realm) == user_session.pk:
        response = sso_cookie.clear_cookie(response, realm)  # the browser's session is the one just ended
    return response


def handle_logout_response(request, realm, message):
    """A client's answer to our LogoutRequest (it arrives inside the logout page's iframe)."""
    status = message.root.find(f"{{{c.NS_SAMLP}}}Status/{{{c.NS_SAMLP}}}StatusCode")
    if status is None or status.get("Value") != c.STATUS_SUCCESS:
        logger.warning("SAML client %s did not confirm the logout", message.client.entity_id)
    return themes.render(request, realm, "logged-out.html")


# Back-channel (SOAP) ----------------------------------------------------------------------------

def _soap_envelope(element):
    envelope = etree.Element(etree.QName(c.NS_SOAP, "Envelope"), nsmap={"soap": c.NS_SOAP})
    etree.SubElement(envelope, etree.QName(c.NS_SOAP, "Body")).append(element)
    return etree.tostring(envelope, xml_declaration=True, encoding="UTF-8")


def post_soap(url, body):
    """POST one SOAP logout request; True on a 2xx answer. Never raises."""
    try:
        response = outbound_http.post(url, body, {"Content-Type": "text/xml; charset=utf-8", "SOAPAction": ""},
                                      timeout=SOAP_TIMEOUT, connect_timeout=SOAP_CONNECT_TIMEOUT)
        if 200 <= response.status < 300:
            return True
        logger.warning("SAML back-channel logout answered HTTP %s", response.status)
    except (outbound_http.TargetRefused, outbound_http.HTTPError, ValueError) as exc:
        logger.warning("SAML back-channel logout failed: %s", exc.__class__.__name__)
    return False


def pending_soap_requests(user_session, client_sessions):
    """(url, SOAP body) for each SAML client of the session with front-channel logout off."""
    realm = user_session.realm
    out = []
    for client_session in client_sessions:
        client = clients.SamlClient(client_session.client)
        name_id, name_format = _name_id_of(client_session)
        url = client.soap_logout_url
        if client.client.protocol != c.PROTOCOL or client.client.frontchannel_logout or not url or not name_id:
            continue
        issuer = client_session.notes.get(NOTE_ISSUER) or realm_url(None, realm.name)
        element = builders.logout_request(issuer=issuer, destination=url, name_id=name_id,
                                          name_id_format=name_format, session_index=client_session.pk)
        if client.flag(c.ATTR_SERVER_SIGNATURE):
            element = outbound.sign_message(realm, client.client, element)
        out.append((url, _soap_envelope(element)))
    return out


def on_session_ended(sender, user_session, client_sessions, reason, **kwargs):
    if reason == sessions.REASON_EXPIRED:
        return
    pending = pending_soap_requests(user_session, client_sessions)
    if pending:
        transaction.on_commit(lambda: _send_all(pending))


def _send_all(pending):
    with ThreadPoolExecutor(max_workers=min(8, len(pending))) as pool:
        return list(pool.map(lambda p: post_soap(*p), pending))


def register():
    """SAML's part in logout propagation (front and back channel); called from ``SamlConfig.ready``."""
    sessions.register_frontchannel_logout(c.PROTOCOL, _frontchannel_url)
    sessions.session_ended.connect(on_session_ended, dispatch_uid="saml-backchannel-logout")
