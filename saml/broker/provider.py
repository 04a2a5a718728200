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

from realms.brokering.providers import BrokerError, ProviderType
from realms.http import themes
from realms.http.web import is_cross_site
from realms.sso import auth_sessions

from .. import builders, outbound, xml
from .. import constants as c
from ..errors import UntrustedRequest
from . import config as saml_config
from . import descriptor, logout, response, unsolicited
from .identity import broker_error, identity_of, our_entity_id, params_of

logger = logging.getLogger("idp.broker")

REQUEST_ID = "request_id"  # the AuthnRequest's ID, kept in the BrokerRequest's notes
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
        if rest.startswith(unsolicited.PREFIX):
            return unsolicited.handle(request, realm, idp, rest[len(unsolicited.PREFIX):])
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
