"""The ``saml`` identity provider type: what the broker (``realms.brokering.broker``) calls.

A sign-in: ``login`` sends a (signed) AuthnRequest to ``singleSignOnServiceUrl`` with the
broker's state as RelayState and keeps the request's ID in the trip's notes; the provider answers
at the broker endpoint, where ``state_of`` reads RelayState back and ``authenticated`` checks the
Response (``response``) and turns the assertion into a ``BrokeredIdentity``.

The answer usually arrives as a cross-site POST (the provider's page posts it). Browsers do not
send our ``SameSite=Lax`` AUTH_SESSION_ID cookie with such a request, so the broker could not find
the sign-in. ``endpoint`` answers that request (a POST, from another site, without the cookie)
with a tiny page of our own that posts the same fields again to the same address: that second
POST is same-origin, so the cookie goes with it. The fields are only echoed, never read, so this
adds nothing an attacker could use: the signed Response is still checked in full the second time.

The SSO session keeps Keycloak's notes for logout: the NameID as the provider gave it
(``SAML_FEDERATED_SUBJECT_NAME_ID``, qualifiers included), its value (``SAML_FEDERATED_SUBJECT``,
what an IdP-initiated logout looks sessions up by), the ``SAML_FEDERATED_SESSION_INDEX``, and our
entity id at sign-in (a back-channel logout runs without a request to derive it from)."""
import logging

from realms.brokering.providers import BrokeredIdentity, BrokerError, ProviderType
from realms.http import themes
from realms.http.web import is_cross_site, realm_url
from realms.sso import auth_sessions

from .. import builders, outbound, xml
from .. import constants as c
from ..errors import UntrustedRequest
from . import config as saml_config
from . import descriptor, logout, response
from .logout import NOTE_ISSUER, NOTE_NAME_ID, NOTE_SESSION_INDEX, NOTE_SUBJECT

logger = logging.getLogger("idp.broker")

REQUEST_ID = "request_id"  # the AuthnRequest's ID, kept in the BrokerRequest's notes
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


class SamlProviderType(ProviderType):
    provider_id = "saml"
    name = "SAML v2.0"

    def clean_config(self, config):
        return saml_config.clean_config(config)

    def import_config(self, data):
        try:
            return saml_config.import_config(data)
        except ValueError as exc:
            raise BrokerError(error="invalid_metadata", detail=str(exc)) from exc

    def login(self, request, realm, idp, broker):
        settings = saml_config.Settings(idp)
        url = settings.config.get("singleSignOnServiceUrl", "")
        if not url:
            raise BrokerError(detail="singleSignOnServiceUrl is not configured")
        if settings.config.get("enabledFromMetadata") == saml_config.FALSE:  # its metadata's validUntil passed
            raise BrokerError(detail="the provider's metadata is no longer valid (enabledFromMetadata)")
        prompt = broker.prompt.split()
        element = builders.authn_request(
            issuer=our_entity_id(request, realm, settings), destination=url, acs_url=broker.redirect_uri,
            protocol_binding=c.BINDING_POST if settings.flag("postBindingResponse") else c.BINDING_REDIRECT,
            name_id_format=settings.name_id_format,
            # Keycloak: AllowCreate unless switched off.
            allow_create=settings.flag("allowCreate", default=True),
            force_authn=settings.flag("forceAuthn") or "login" in prompt or broker.max_age == "0",
            is_passive="none" in prompt, acs_index=settings.attribute_consuming_service_index,
            subject=broker.login_hint if settings.flag("loginHint") else None, authn_context=settings.authn_context())
        broker.notes[REQUEST_ID] = element.get("ID")
        try:
            return outbound.send(request, realm, url=url, binding=c.BINDING_POST if settings.flag(
                "postBindingAuthnRequest") else c.BINDING_REDIRECT, param="SAMLRequest", element=element,
                relay_state=broker.state, sign=settings.flag("wantAuthnRequestsSigned"),
                algorithm=settings.algorithm, transformer=settings.key_name_transformer)
        except LookupError as exc:  # the realm has no active RSA key to sign with
            raise BrokerError(detail=str(exc)) from exc

    def state_of(self, request):
        params, _ = params_of(request)
        return params.get("RelayState", "")

    def authenticated(self, request, realm, idp, broker):
        settings = saml_config.Settings(idp)
        params, binding = params_of(request)
        if len(params.getlist("SAMLResponse")) != 1:
            raise BrokerError("invalidRequesterMessage", "invalid_saml_response", "no single SAMLResponse")
        try:
            answer = response.read(params["SAMLResponse"], binding, settings=settings, realm=realm,
                                   endpoint_url=broker.redirect_uri, entity_id=our_entity_id(request, realm, settings),
                                   request_id=broker.notes.get(REQUEST_ID, ""),
                                   query_string=request.META.get("QUERY_STRING", ""))
        except UntrustedRequest as exc:
            raise broker_error(exc) from exc
        return identity_of(idp, settings, answer, params["SAMLResponse"], our_entity_id(request, realm, settings))

    def endpoint(self, request, realm, idp, rest):
        if rest == "descriptor":
            return descriptor.response(request, realm, idp) if request.method in ("GET", "HEAD") else None
        if rest == logout.POST_STEP:
            return logout.post_step(request, realm, idp)
        if rest:
            return None
        params, binding = params_of(request)
        if "SAMLRequest" in params:
            return logout.handle_request(request, realm, idp, params, binding)
        if "SAMLResponse" not in params:
            return None
        if _kind(params["SAMLResponse"], binding) == "LogoutResponse":
            return logout.handle_response(request, realm, idp, params, binding)
        if (request.method == "POST" and auth_sessions.COOKIE not in request.COOKIES and is_cross_site(request)):
            return _post_again(request, realm, params)
        return None

    def logout_url(self, request, realm, idp, notes, return_url):
        return logout.logout_url(request, realm, idp, notes, return_url)

    def backchannel_logout(self, realm, idp, notes):
        logout.backchannel_logout(realm, idp, notes)

    def stored_token(self, idp, token):
        """Keycloak answers the stored SAMLResponse as it arrived."""
        return token, "text/plain"


def _kind(encoded, binding):
    try:
        raw = xml.decode_redirect(encoded) if binding == c.BINDING_REDIRECT else xml.decode_post(encoded)
        return xml.parse(raw).tag.rsplit("}", 1)[-1]
    except UntrustedRequest:
        return ""


def _post_again(request, realm, params):
    """The same fields posted again from our own page (same-origin: the cookie goes along)."""
    fields = [(name, params[name]) for name in ("SAMLResponse", "RelayState") if name in params]
    return themes.render(request, realm, "form-post.html", {"action": request.path, "fields": fields})


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
