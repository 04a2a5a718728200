"""Checking an identity provider's answer to our AuthnRequest (SAML profiles §4.1.4.3), with the
code our IdP reads its own requests with: ``saml.xml`` (bounded, no DTD, comments dropped),
``saml.inbound.check_header`` (version, ID, IssueInstant, Destination) and
``saml.signatures.verify_element`` (one enveloped signature referencing its parent by a unique
ID; the verified copy is what is read afterwards, so a wrapped unsigned copy never is).

In order, as Keycloak's SAMLEndpoint: the Response's signature when it has one (and
``validateSignature`` is on), its header, its Issuer (``idpEntityId``), its status (an error
status refuses with the provider's code kept for the log), InResponseTo = our AuthnRequest's id;
then exactly one assertion, decrypted with the realm's key when encrypted (required with
``wantAssertionsEncrypted``), its signature (required with ``wantAssertionsSigned``; with
``validateSignature`` on, an answer signed nowhere is refused), its Issuer, the bearer
SubjectConfirmationData (Recipient, NotOnOrAfter, InResponseTo), and the Conditions (NotBefore,
NotOnOrAfter with ``allowedClockSkew``, every AudienceRestriction naming our entity id).

Every refusal is an ``UntrustedRequest`` whose ``event_error`` says which kind it is; the type
turns it into the message the person reads."""
from dataclasses import dataclass, field
from datetime import timedelta

from django.utils import timezone

from realms.data.crypto import constant_time_equals

from .. import constants as c
from .. import inbound, signatures, xml
from ..errors import UntrustedRequest
from .decryption import decrypt_assertion

INVALID_SIGNATURE, INVALID_RESPONSE, EXPIRED, STATUS = (
    "invalid_signature", "invalid_saml_response", "expired_code", "identity_provider_error")


def _q(ns, name):
    return f"{{{ns}}}{name}"


@dataclass
class Attribute:
    name: str
    friendly_name: str
    values: list = field(default_factory=list)


@dataclass
class Answer:
    """What a checked Response proves."""

    response: object
    assertion: object
    name_id: object  # the saml:NameID element, or None
    session_index: str
    attributes: list


def refuse(text, error=INVALID_RESPONSE):
    raise UntrustedRequest(text, error)


def verify(root, certificates, allow_sha1):
    """The verified copy of ``root`` by any of the provider's certificates."""
    if not certificates:
        refuse("No certificate to check the identity provider's signature with.", INVALID_SIGNATURE)
    for cert in certificates:
        try:
            return signatures.verify_element(root, cert, allow_sha1=allow_sha1)
        except UntrustedRequest:
            continue
    refuse("Invalid signature.", INVALID_SIGNATURE)


def check_issuer(element, idp_entity_id, *, required):
    issuer = element.find(_q(c.NS_SAML, "Issuer"))
    if issuer is None:
        if required:
            refuse("The identity provider's answer names no Issuer.")
        return
    if idp_entity_id and (issuer.text or "").strip() != idp_entity_id:
        refuse("The answer was issued by another identity provider.")


def _status(root):
    code = root.find(f"{_q(c.NS_SAMLP, 'Status')}/{_q(c.NS_SAMLP, 'StatusCode')}")
    value = code.get("Value", "") if code is not None else ""
    sub = code.find(_q(c.NS_SAMLP, "StatusCode")) if code is not None else None
    return value, sub.get("Value", "") if sub is not None else ""


def _in_response_to(value, expected):
    """An answer to our request names it; an unsolicited one (``expected`` "": an IdP-initiated
    sign-in) names none."""
    if not expected:
        return not value
    return bool(value) and constant_time_equals(value, expected)


def verify_query(query_string, param, certificates, allow_sha1):
    """The Redirect binding's query-string signature by any of the provider's certificates."""
    for cert in certificates:
        try:
            return signatures.verify_query(query_string, param, cert, allow_sha1=allow_sha1)
        except UntrustedRequest:
            continue
    refuse("Invalid signature.", INVALID_SIGNATURE)


def read(encoded, binding, *, settings, realm, endpoint_url, entity_id, request_id, query_string=""):
    """The ``Answer`` a POSTed (base64) or redirected (deflated, its signature on the query
    string, bindings §3.4.4.1) SAMLResponse proves."""
    raw = xml.decode_redirect(encoded) if binding == c.BINDING_REDIRECT else xml.decode_post(encoded)
    root = xml.parse(raw)
    if root.tag != _q(c.NS_SAMLP, "Response"):
        refuse("Unexpected SAML message.")
    validate = settings.flag("validateSignature")
    certificates = settings.certificates()
    allow_sha1 = settings.algorithm == "RSA_SHA1"
    response_signed = False
    if validate and binding == c.BINDING_REDIRECT and "Signature=" in query_string:
        verify_query(query_string, "SAMLResponse", certificates, allow_sha1)
        response_signed = True
    elif validate and signatures.has_signature(root):
        root = verify(root, certificates, allow_sha1)
        response_signed = True
    inbound.check_header(root, signed=response_signed, binding=binding, endpoint_url=endpoint_url)
    idp_entity_id = settings.config.get("idpEntityId", "")
    check_issuer(root, idp_entity_id, required=False)
    status, sub_status = _status(root)
    if status != c.STATUS_SUCCESS:
        if validate and not response_signed:
            refuse("An unsigned error answer.", INVALID_SIGNATURE)
        refuse(f"The identity provider answered {status or 'no status'} {sub_status}".strip(), STATUS)
    if not _in_response_to(root.get("InResponseTo", ""), request_id):
        refuse("The answer is not for our request (InResponseTo).")
    assertion = _assertion(root, settings, realm)
    assertion_signed = signatures.has_signature(assertion)
    if settings.flag("wantAssertionsSigned") and not assertion_signed:
        refuse("The assertion is not signed.", INVALID_SIGNATURE)
    if validate and assertion_signed:
        assertion = verify(assertion, certificates, allow_sha1)
    elif validate and not response_signed:
        refuse("The answer is not signed.", INVALID_SIGNATURE)
    check_issuer(assertion, idp_entity_id, required=True)
    name_id, session_index = _subject(assertion, settings, endpoint_url, request_id)
    _conditions(assertion, settings, entity_id, endpoint_url)
    return Answer(response=root, assertion=assertion, name_id=name_id, session_index=session_index,
                  attributes=attributes_of(assertion))


def _assertion(root, settings, realm):
    plain = root.findall(_q(c.NS_SAML, "Assertion"))
    encrypted = root.findall(_q(c.NS_SAML, "EncryptedAssertion"))
    if len(plain) + len(encrypted) != 1:
        refuse("The answer must carry exactly one assertion.")
    if settings.flag("wantAssertionsEncrypted") and not encrypted:
        refuse("The assertion is not encrypted, which is required.")
    return decrypt_assertion(realm, encrypted[0]) if encrypted else plain[0]


def _skewed(settings):
    return timedelta(seconds=settings.clock_skew)


def _subject(assertion, settings, endpoint_url, request_id):
    subject = assertion.find(_q(c.NS_SAML, "Subject"))
    if subject is None:
        refuse("The assertion has no Subject.")
    now, skew = timezone.now(), _skewed(settings)
    confirmed = False
    for confirmation in subject.findall(_q(c.NS_SAML, "SubjectConfirmation")):
        if confirmation.get("Method") != c.CONFIRMATION_BEARER:
            continue
        data = confirmation.find(_q(c.NS_SAML, "SubjectConfirmationData"))
        if data is None:
            continue
        recipient, expires = data.get("Recipient"), inbound.parse_instant(data.get("NotOnOrAfter", ""))
        answered = data.get("InResponseTo")
        if recipient is not None and recipient != endpoint_url:
            continue
        if data.get("NotOnOrAfter") is not None and (expires is None or now - skew >= expires):
            continue
        if answered is not None and not _in_response_to(answered, request_id):
            continue
        confirmed = True
        break
    if not confirmed:
        refuse("No bearer subject confirmation for this endpoint and request.", EXPIRED)
    statement = assertion.find(_q(c.NS_SAML, "AuthnStatement"))
    return subject.find(_q(c.NS_SAML, "NameID")), statement.get("SessionIndex", "") if statement is not None else ""


def _conditions(assertion, settings, entity_id, endpoint_url):
    conditions = assertion.find(_q(c.NS_SAML, "Conditions"))
    if conditions is None:
        return
    now, skew = timezone.now(), _skewed(settings)
    not_before, not_after = conditions.get("NotBefore"), conditions.get("NotOnOrAfter")
    if not_before is not None:
        start = inbound.parse_instant(not_before)
        if start is None or now + skew < start:
            refuse("The assertion is not valid yet.", EXPIRED)
    if not_after is not None:
        end = inbound.parse_instant(not_after)
        if end is None or now - skew >= end:
            refuse("The assertion has expired.", EXPIRED)
    for restriction in conditions.findall(_q(c.NS_SAML, "AudienceRestriction")):
        audiences = {(a.text or "").strip() for a in restriction.findall(_q(c.NS_SAML, "Audience"))}
        if not audiences & {entity_id, endpoint_url}:
            refuse("The assertion is meant for another audience.", EXPIRED)


def _value_text(value):
    return "".join(value.itertext()).strip() if len(value) else (value.text or "").strip()


def attributes_of(assertion):
    """Every Attribute of the assertion's AttributeStatements, in order."""
    found = []
    for statement in assertion.findall(_q(c.NS_SAML, "AttributeStatement")):
        for attribute in statement.findall(_q(c.NS_SAML, "Attribute")):
            found.append(Attribute(attribute.get("Name", ""), attribute.get("FriendlyName", ""),
                                   [_value_text(v) for v in attribute.findall(_q(c.NS_SAML, "AttributeValue"))]))
    return found
