"""SAML protocol messages the IdP writes: Response with Assertion, LogoutRequest, LogoutResponse."""
import secrets
from datetime import UTC, timedelta

from django.utils import timezone
from lxml import etree

from . import constants as c
from .mappers import Attribute


def new_id():
    # An xs:ID must be an NCName: it cannot start with a digit.
    return "ID_" + secrets.token_hex(16)


def instant(dt):
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _el(parent, ns, name, text=None, **attrs):
    element = etree.SubElement(parent, etree.QName(ns, name), **{k: v for k, v in attrs.items() if v is not None})
    if text is not None:
        element.text = text
    return element


def _message(tag, *, issuer, destination=None, in_response_to=None, now=None, **attrs):
    now = now or timezone.now()
    root = etree.Element(etree.QName(c.NS_SAMLP, tag), nsmap={"samlp": c.NS_SAMLP, "saml": c.NS_SAML})
    for name, value in (("ID", new_id()), ("Version", c.VERSION), ("IssueInstant", instant(now)),
                        ("Destination", destination), ("InResponseTo", in_response_to), *attrs.items()):
        if value:
            root.set(name, value)
    _el(root, c.NS_SAML, "Issuer", issuer)
    return root


def _status(root, status, sub_status="", message=""):
    status_el = _el(root, c.NS_SAMLP, "Status")
    code = _el(status_el, c.NS_SAMLP, "StatusCode", Value=status)
    if sub_status:
        _el(code, c.NS_SAMLP, "StatusCode", Value=sub_status)
    if message:
        _el(status_el, c.NS_SAMLP, "StatusMessage", message)


def response(*, issuer, destination, in_response_to, status=c.STATUS_SUCCESS, sub_status="", message=""):
    root = _message("Response", issuer=issuer, destination=destination, in_response_to=in_response_to)
    _status(root, status, sub_status, message)
    return root


def assertion(*, issuer, name_id, name_id_format, recipient, in_response_to, audience, session_index,
              session_expires, authn_instant, attributes: list[Attribute], lifespan, authn_statement=True,
              one_time_use=False, now=None):
    """A bearer assertion (SAML profiles §4.1.4.2): subject confirmation bound to the ACS URL
    and the request, audience restricted to the SP, valid for ``lifespan`` seconds."""
    now = now or timezone.now()
    expires = instant(now + timedelta(seconds=lifespan))
    root = etree.Element(etree.QName(c.NS_SAML, "Assertion"), nsmap={"saml": c.NS_SAML},
                         ID=new_id(), Version=c.VERSION, IssueInstant=instant(now))
    _el(root, c.NS_SAML, "Issuer", issuer)
    subject = _el(root, c.NS_SAML, "Subject")
    _el(subject, c.NS_SAML, "NameID", name_id, Format=name_id_format)
    confirmation = _el(subject, c.NS_SAML, "SubjectConfirmation", Method=c.CONFIRMATION_BEARER)
    _el(confirmation, c.NS_SAML, "SubjectConfirmationData", InResponseTo=in_response_to or None,
        NotOnOrAfter=expires, Recipient=recipient)
    conditions = _el(root, c.NS_SAML, "Conditions", NotBefore=instant(now), NotOnOrAfter=expires)
    _el(_el(conditions, c.NS_SAML, "AudienceRestriction"), c.NS_SAML, "Audience", audience)
    if one_time_use:
        _el(conditions, c.NS_SAML, "OneTimeUse")
    if authn_statement:
        statement = _el(root, c.NS_SAML, "AuthnStatement", AuthnInstant=instant(authn_instant),
                        SessionIndex=session_index, SessionNotOnOrAfter=instant(session_expires))
        _el(_el(statement, c.NS_SAML, "AuthnContext"), c.NS_SAML, "AuthnContextClassRef",
            c.AUTHN_CONTEXT_PASSWORD)
    if attributes:
        statement = _el(root, c.NS_SAML, "AttributeStatement")
        for attribute in attributes:
            attr = _el(statement, c.NS_SAML, "Attribute", Name=attribute.name, NameFormat=attribute.name_format,
                       FriendlyName=attribute.friendly_name or None)
            for value in attribute.values:
                value_el = etree.SubElement(attr, etree.QName(c.NS_SAML, "AttributeValue"),
                                            nsmap={"xs": c.NS_XS, "xsi": c.NS_XSI})
                value_el.set(etree.QName(c.NS_XSI, "type"), "xs:string")
                value_el.text = value
    return root


def logout_request(*, issuer, destination, name_id, name_id_format, session_index):
    root = _message("LogoutRequest", issuer=issuer, destination=destination, Reason=c.LOGOUT_REASON_USER)
    _el(root, c.NS_SAML, "NameID", name_id, Format=name_id_format or None)
    if session_index:
        _el(root, c.NS_SAMLP, "SessionIndex", session_index)
    return root


def logout_response(*, issuer, destination, in_response_to, status=c.STATUS_SUCCESS, sub_status=""):
    root = _message("LogoutResponse", issuer=issuer, destination=destination, in_response_to=in_response_to)
    _status(root, status, sub_status)
    return root


def authn_request(*, issuer, destination, acs_url, protocol_binding, name_id_format, allow_create=None,
                  force_authn=False, is_passive=False, acs_index=None, subject=None, authn_context=None):
    """The AuthnRequest the realm sends as a service provider (identity brokering), children in
    the schema's order: Issuer, Subject, NameIDPolicy, RequestedAuthnContext.
    ``authn_context``: (comparison, class refs, decl refs)."""
    root = _message("AuthnRequest", issuer=issuer, destination=destination, AssertionConsumerServiceURL=acs_url,
                    ProtocolBinding=protocol_binding, ForceAuthn="true" if force_authn else None,
                    IsPassive="true" if is_passive else None,
                    AttributeConsumingServiceIndex=None if acs_index is None else str(acs_index))
    if subject:
        _el(_el(root, c.NS_SAML, "Subject"), c.NS_SAML, "NameID", subject)
    _el(root, c.NS_SAMLP, "NameIDPolicy", Format=name_id_format or None,
        AllowCreate=None if allow_create is None else str(bool(allow_create)).lower())
    comparison, class_refs, decl_refs = authn_context or ("exact", [], [])
    if class_refs or decl_refs:
        context = _el(root, c.NS_SAMLP, "RequestedAuthnContext", Comparison=comparison)
        for ref in class_refs:
            _el(context, c.NS_SAML, "AuthnContextClassRef", ref)
        if not class_refs:
            for ref in decl_refs:
                _el(context, c.NS_SAML, "AuthnContextDeclRef", ref)
    return root
