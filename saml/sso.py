"""Web browser SSO (SAML profiles §4.1): an AuthnRequest, or an IdP-initiated start, becomes a
sign-in through the realm's flow engine (``realms.signin.flows``), shared with OpenID Connect: an SSO
session already in the browser answers without a form; a new sign-in creates the session every
protocol sees. Once signed in, the client gets a Response with an Assertion: signed, encrypted
and delivered as the client's settings say.
"""
import uuid

from realms.audit import events
from realms.brokering import broker
from realms.http.web import client_address, realm_url
from realms.signin import engine
from realms.sso import auth_sessions, sessions

from . import builders, encryption, inbound, mappers, outbound, xml
from . import constants as c
from .clients import by_url_name, cached
from .errors import StatusError

# Client-session notes that single logout needs later (NameID as the client knows it).
NOTE_NAME_ID = "saml.name_id"
NOTE_NAME_ID_FORMAT = "saml.name_id_format"
NOTE_ISSUER = "saml.issuer"  # back-channel logout runs without a request: the issuer the SP knows


def endpoint_url(request, realm_name):
    return f"{realm_url(request, realm_name)}/protocol/saml"


def _details(data, **extra):
    return {"auth_method": c.PROTOCOL, "protocol": c.PROTOCOL, "redirect_uri": data.get("redirect_uri", ""), **extra}


def _requested_format(client, root):
    """The Keycloak name of the NameID format to use: the client's unless the request asks for
    a supported one and the client does not force its own."""
    policy = root.find(f"{{{c.NS_SAMLP}}}NameIDPolicy")
    requested = policy.get("Format", "") if policy is not None else ""
    if client.flag(c.ATTR_FORCE_NAME_ID_FORMAT) or requested in ("", c.NAMEID_UNSPECIFIED):
        return client.name_id_format
    for name, urn in c.NAMEID_FORMATS.items():
        if urn == requested and name != "username":
            return name
    raise StatusError(c.STATUS_REQUESTER, "Unsupported NameID format.", "invalid_saml_request",
                      sub_status=c.STATUS_INVALID_NAMEID_POLICY)


def start_sso(request, realm, message):
    """An AuthnRequest that passed ``inbound.read``: the ACS URL is checked, the id recorded,
    then the flow runs (or a status Response goes back for a trusted but unacceptable request)."""
    client, root = message.client, message.root
    acs = client.acs_url(root.get("AssertionConsumerServiceURL", ""), message.binding)
    data = {"redirect_uri": acs, "binding": client.response_binding(root.get("ProtocolBinding", ""), message.binding),
            "request_id": message.id, "relay_state": message.relay_state}
    inbound.record_request_id(message)
    try:
        data["name_id_format"] = _requested_format(client, root)
    except StatusError as exc:
        return error_response(request, realm, client, data, exc)
    auth_session = auth_sessions.start(request, realm, client.client, protocol=c.PROTOCOL, client_data=data,
                                       force_login=root.get("ForceAuthn") in ("true", "1"))
    return engine.advance(request, realm, client.client, auth_session,
                         interactive=root.get("IsPassive") not in ("true", "1"))


def idp_initiated_session(request, realm, url_name, relay_state=""):
    """(client, authentication session) of an IdP-initiated sign-in to the client that set
    ``saml_idp_initiated_sso_url_name`` (here, or through an identity provider's unsolicited
    Response at the broker's ``endpoint/clients/<url_name>``); UntrustedRequest for none."""
    client = by_url_name(realm, url_name)
    data = {"redirect_uri": client.acs_url("", c.BINDING_POST),
            "binding": client.response_binding("", c.BINDING_POST), "request_id": "",
            "relay_state": client.attributes.get(c.ATTR_IDP_INITIATED_RELAY_STATE) or relay_state,
            "name_id_format": client.name_id_format}
    return client.client, auth_sessions.start(request, realm, client.client, protocol=c.PROTOCOL, client_data=data)


def start_idp_initiated(request, realm, url_name, relay_state=""):
    """IdP-initiated SSO at ``/protocol/saml/clients/<url_name>``; unsolicited, so no InResponseTo."""
    found, auth_session = idp_initiated_session(request, realm, url_name, relay_state)
    return engine.advance(request, realm, found, auth_session)


# Responses ---------------------------------------------------------------------------------

def _name_id(user, client, name_format, client_session):
    if name_format == "email":
        if not user.email:
            raise StatusError(c.STATUS_REQUESTER, "The user has no email address.", "invalid_saml_request",
                              sub_status=c.STATUS_INVALID_NAMEID_POLICY)
        return user.email
    if name_format == "persistent":
        # A pairwise opaque id kept on the user, as Keycloak keeps it.
        key = c.PERSISTENT_NAME_ID_ATTRIBUTE.format(client_id=client.entity_id)
        values = (user.attributes or {}).get(key) or []
        if not values:
            values = [f"G-{uuid.uuid4()}"]
            user.attributes = {**(user.attributes or {}), key: values}
            user.save(update_fields=["attributes"])
        return values[0] if isinstance(values, list) else values
    if name_format == "transient":
        noted = client_session.notes.get(NOTE_NAME_ID)
        if noted and client_session.notes.get(NOTE_NAME_ID_FORMAT) == c.NAMEID_TRANSIENT:
            return noted
        return f"G-{uuid.uuid4()}"
    return user.username


def _response(request, realm, client, data, *, assertion=None, status=c.STATUS_SUCCESS, sub_status="", message=""):
    """The Response element and whether the delivery signs it (``saml.server.signature``)."""
    element = builders.response(issuer=realm_url(request, realm.name), destination=data["redirect_uri"],
                                in_response_to=data.get("request_id") or None, status=status,
                                sub_status=sub_status, message=message)
    if assertion is not None:
        if client.flag(c.ATTR_ASSERTION_SIGNATURE):
            assertion = outbound.sign_message(realm, client.client, assertion)
        if client.flag(c.ATTR_ENCRYPT):
            assertion = encryption.encrypt_assertion(xml.serialize(assertion), client.client)
        element.append(assertion)
    return element


def _deliver(request, realm, client, data, element):
    return outbound.deliver(request, realm, client.client, url=data["redirect_uri"], binding=data["binding"],
                            param="SAMLResponse", element=element, relay_state=data.get("relay_state", ""),
                            sign=client.flag(c.ATTR_SERVER_SIGNATURE))


def error_response(request, realm, client, data, exc: StatusError, user_id=""):
    events.emit(realm, "LOGIN_ERROR", client_id=client.entity_id, user_id=user_id,
                ip_address=client_address(request), error=exc.event_error,
                details=_details(data, reason=exc.message or exc.status))
    element = _response(request, realm, client, data, status=exc.status, sub_status=exc.sub_status,
                        message=exc.message)
    return _deliver(request, realm, client, data, element)


def _complete(ctx, user_session):
    """The user is signed in: client session, NameID, assertion, LOGIN event, delivery."""
    data = ctx.auth_session.client_data
    realm, user = ctx.realm, ctx.user
    client = cached(realm).of(ctx.client)
    client_session = sessions.get_or_create_client_session(user_session, ctx.client, redirect_uri=data["redirect_uri"])
    sessions.touch(user_session, client_session)
    try:
        name_id = _name_id(user, client, data["name_id_format"], client_session)
    except StatusError as exc:
        return error_response(ctx.request, realm, client, data, exc, user_id=user.pk)
    name_format = c.NAMEID_FORMATS[data["name_id_format"]]
    issuer = realm_url(ctx.request, realm.name)
    notes = {NOTE_NAME_ID: name_id, NOTE_NAME_ID_FORMAT: name_format, NOTE_ISSUER: issuer}
    if any(client_session.notes.get(name) != value for name, value in notes.items()):
        # Written only when they changed: a sign-in again to the client mostly names the user as before.
        client_session.notes = {**client_session.notes, **notes}
        client_session.save(update_fields=["notes"])
    assertion = builders.assertion(
        issuer=issuer, name_id=name_id, name_id_format=name_format, recipient=data["redirect_uri"],
        in_response_to=data.get("request_id"), audience=client.entity_id, session_index=client_session.pk,
        session_expires=sessions.session_expiry(realm, user_session), authn_instant=user_session.auth_time,
        attributes=mappers.attributes_for(user, client), lifespan=client.assertion_lifespan or realm.access_code_lifespan,
        authn_statement=client.flag(c.ATTR_AUTHNSTATEMENT), one_time_use=client.flag(c.ATTR_ONETIMEUSE),
    )
    element = _response(ctx.request, realm, client, data, assertion=assertion)
    events.emit(realm, "LOGIN", client_id=client.entity_id, user_id=user.pk, session_id=user_session.pk,
                ip_address=ctx.ip_address, details=_details(data, username=user.username, consent="no_consent_required",
                                                            **broker.login_details(user_session)))
    return _deliver(ctx.request, realm, client, data, element)


def _fail(ctx, error):
    data = ctx.auth_session.client_data
    if error in ("login_required", "interaction_required"):
        exc = StatusError(c.STATUS_RESPONDER, "", error, sub_status=c.STATUS_NO_PASSIVE)
    else:
        exc = StatusError(c.STATUS_RESPONDER, "Sign-in could not be completed.", error,
                          sub_status=c.STATUS_AUTHN_FAILED)
    return error_response(ctx.request, ctx.realm, cached(ctx.realm).of(ctx.client), data, exc,
                          user_id=ctx.auth_session.user_id)


def register():
    """SAML's sign-in completion; called from ``SamlConfig.ready``."""
    engine.register_protocol(c.PROTOCOL, _complete, _fail)
