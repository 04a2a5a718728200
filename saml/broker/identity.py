"""The identity a checked SAML answer proves, and what the person reads when it proves none: shared
by the solicited sign-in (``provider``) and the IdP-initiated one (``unsolicited``)."""
from realms.brokering.providers import BrokeredIdentity, BrokerError
from realms.http.web import realm_url

from .. import constants as c
from .. import xml
from ..errors import UntrustedRequest
from . import response
from .logout import NOTE_ISSUER, NOTE_NAME_ID, NOTE_SESSION_INDEX, NOTE_SUBJECT

# X.500 profile names of the e-mail attribute (Keycloak's X500SAMLProfileConstants.EMAIL).
EMAIL_NAMES = ("urn:oid:1.2.840.113549.1.9.1",)
EMAIL_FRIENDLY_NAMES = ("email",)
MESSAGES = {response.STATUS: "identityProviderUnexpectedErrorMessage", response.EXPIRED: "expiredCodeMessage"}


def broker_error(exc: UntrustedRequest):
    """The BrokerError the person sees for a refused answer (Keycloak's messages: an invalid
    requester, an expired code, or the provider's unexpected error); the reason goes to the log."""
    return BrokerError(MESSAGES.get(exc.event_error, "invalidRequesterMessage"), exc.event_error, exc.message)


def params_of(request):
    """(parameters, binding) of a message at the broker endpoint."""
    if request.method == "POST":
        return request.POST, c.BINDING_POST
    return request.GET, c.BINDING_REDIRECT


def our_entity_id(request, realm, settings):
    return settings.entity_id(realm_url(request, realm.name))



def _principal(settings, answer):
    kind = settings.principal_type
    if kind == "SUBJECT":
        return (answer.name_id.text or "").strip() if answer.name_id is not None else ""
    wanted = settings.config.get("principalAttribute", "")
    for attribute in answer.attributes:
        if (attribute.name if kind == "ATTRIBUTE" else attribute.friendly_name) == wanted and attribute.values:
            return attribute.values[0]
    return ""


def identity_of(idp, settings, answer, encoded, entity_id):
    """The BrokeredIdentity of a checked answer: the principal as configured (NameID, or an
    attribute by name or friendly name), the e-mail from an e-mail NameID or the X.500 e-mail
    attribute (verified only when the provider is trusted with e-mail)."""
    principal = _principal(settings, answer)
    if not principal:
        raise BrokerError("invalidRequesterMessage", "invalid_saml_response",
                          f"no principal in the assertion; expected {settings.principal_type}")
    name_id = answer.name_id
    email = ""
    if name_id is not None and name_id.get("Format") == c.NAMEID_EMAIL:
        email = (name_id.text or "").strip()
    claims = {}
    for attribute in answer.attributes:
        for key in (attribute.name, attribute.friendly_name):
            if key:
                claims.setdefault(key, []).extend(attribute.values)
        if attribute.values and (attribute.name in EMAIL_NAMES or attribute.friendly_name in EMAIL_FRIENDLY_NAMES):
            email = attribute.values[0]
    notes = {NOTE_ISSUER: entity_id}
    if name_id is not None:
        notes.update({NOTE_NAME_ID: xml.serialize(name_id).decode(), NOTE_SUBJECT: (name_id.text or "").strip()})
    if answer.session_index:
        notes[NOTE_SESSION_INDEX] = answer.session_index
    return BrokeredIdentity(
        id=principal, username=principal, email=email, email_verified=bool(email) and idp.trust_email,
        claims=claims, token=encoded if idp.store_token else "", session_notes=notes,
        context={"name_id": (name_id.text or "").strip() if name_id is not None else principal,
                 "assertion": xml.serialize(answer.assertion).decode()})
