"""IdP-initiated sign-in through a SAML identity provider (Keycloak's
``/broker/{alias}/endpoint/clients/{url_name}``): the provider posts an unsolicited Response there,
and the user lands, signed in, at our SAML client whose ``saml_idp_initiated_sso_url_name`` is
``url_name`` (the same client our own IdP-initiated SSO serves).

Nothing of ours asked for this answer, so there is no request id or state to bind it to: it must
name no InResponseTo (an answer to some request is not unsolicited), it is checked like any other
answer (signature, Destination = this address, issuer, audience, lifetimes), and its assertion's
ID is recorded until the answer would be stale (``saml.inbound.MAX_AGE``), so it signs in once."""
import hashlib

from realms.brokering import broker
from realms.brokering.providers import BrokerError
from realms.http import themes
from realms.http.messages import Message

from .. import inbound, sso
from ..errors import UntrustedRequest
from . import config as saml_config
from . import response
from .identity import broker_error, identity_of, our_entity_id, params_of

PREFIX = "clients/"


def _record(client, idp, assertion_id):
    """Refuse an assertion seen before at this provider (replay); remember it otherwise."""
    key = "broker:" + hashlib.sha256(f"{idp.alias}\n{assertion_id}".encode()).hexdigest()
    if not inbound.first_use(client, key):
        raise UntrustedRequest("This answer was already used.")


def handle(request, realm, idp, url_name):
    params, binding = params_of(request)
    if len(params.getlist("SAMLResponse")) != 1:
        return None
    settings = saml_config.Settings(idp)
    try:
        client, auth_session = sso.idp_initiated_session(request, realm, url_name, params.get("RelayState", ""))
        answer = response.read(
            params["SAMLResponse"], binding, settings=settings, realm=realm,
            endpoint_url=f"{broker.endpoint_url(request, realm, idp.alias)}/{PREFIX}{url_name}",
            entity_id=our_entity_id(request, realm, settings), request_id="",
            query_string=request.META.get("QUERY_STRING", ""))
        _record(client, idp, answer.assertion.get("ID", ""))
        identity = identity_of(idp, settings, answer, params["SAMLResponse"], our_entity_id(request, realm, settings))
    except (UntrustedRequest, BrokerError) as exc:
        refused = broker_error(exc) if isinstance(exc, UntrustedRequest) else exc
        return themes.render(request, realm, "error.html", {"message": Message(refused.message_key)}, status=400)
    return broker.authenticated(request, realm, client, auth_session, idp, identity)
