"""Identity provider types: the registry the protocol apps fill (``register_provider_type`` from
their ``AppConfig.ready``) and what a type answers.

A brokered sign-in: the login page (a button, ``kc_idp_hint``, the redirector step) calls
``broker.begin``, which records a ``BrokerRequest`` in the authentication session and asks the
type for the redirect to the provider (``login``). The provider answers at
``/realms/{realm}/broker/{alias}/endpoint``; the broker finds the sign-in again by the state the
type reads from the answer (``state_of``), checks it, and asks the type for the user it proved
(``authenticated``), a ``BrokeredIdentity``. Everything after that (first broker login, linking,
mappers, sessions) is the broker's and the same for every type."""
from dataclasses import dataclass, field

from ..errors import RealmsError
from ..registry import Registry


class BrokerError(RealmsError):
    """A provider's answer cannot sign anyone in. ``message_key`` is what the person reads on our
    page (a theme message key, never the provider's raw text); ``error`` the event's error."""

    def __init__(self, message_key="identityProviderUnexpectedErrorMessage", error="identity_provider_error",
                 detail=""):
        super().__init__(detail or message_key)
        self.message_key, self.error, self.detail = message_key, error, detail


@dataclass
class BrokerRequest:
    """One trip to a provider, kept in the authentication session until it answers.

    ``state`` is sent to the provider and must come back (OIDC ``state``, SAML ``RelayState``);
    ``redirect_uri`` is the broker endpoint the provider answers at; ``notes`` is the type's own
    (nonce, PKCE verifier, AuthnRequest id), stored with the request. ``prompt``, ``max_age`` and
    ``login_hint`` are the client's, forwarded where the provider is configured to."""

    alias: str
    state: str
    redirect_uri: str
    prompt: str = ""
    max_age: str = ""
    login_hint: str = ""
    locale: str = ""
    notes: dict = field(default_factory=dict)


@dataclass
class BrokeredIdentity:
    """The user a provider proved: its id for them (``id``, stable: the link's key), what it says
    of them, and what the broker keeps. ``email_verified`` is already decided by the type (the
    provider's claim only where configured to trust it). ``claims`` is what mappers read (the ID
    token's and userinfo's claims, or a SAML assertion's attributes by name); ``token`` is what
    ``storeToken`` keeps (the token response as JSON, or the assertion); ``session_notes`` go on
    the SSO session for logout (the ID token, the SAML NameID and SessionIndex)."""

    id: str
    username: str = ""
    email: str = ""
    email_verified: bool = False
    first_name: str = ""
    last_name: str = ""
    claims: dict = field(default_factory=dict)
    token: str = ""
    session_notes: dict = field(default_factory=dict)
    # Type-specific context a mapper of that type may need (the assertion's XML for XPath).
    context: dict = field(default_factory=dict)


class ProviderType:
    """What a kind of identity provider does. ``provider_id`` is Keycloak's (``oidc``,
    ``keycloak-oidc``, ``oauth2``, ``saml``, ``google`` ...), ``name`` its display name;
    ``social`` puts it among Keycloak's social providers (server info, the console's list)."""

    provider_id = ""
    name = ""
    social = False

    def clean_config(self, config) -> dict:
        """``config`` checked for this type (raise ``ValueError`` with a message an admin reads);
        the map to store. The default keeps it as it is."""
        return dict(config)

    def import_config(self, data) -> dict:
        """Keycloak's ``import-config``: the config map read from the provider's metadata
        (``data``: the posted ``fromUrl`` fetched through ``realms.http.outbound``, or a file's
        content). Raise ``BrokerError`` when it cannot be read; ``ValueError`` when the type has
        no metadata to import (the default)."""
        raise ValueError("This provider type has no metadata to import")

    def login(self, request, realm, idp, broker: BrokerRequest):
        """The HTTP response that sends the browser to the provider."""
        raise NotImplementedError

    def state_of(self, request) -> str:
        """The state the provider echoed in its answer at the broker endpoint ("" when none)."""
        raise NotImplementedError

    def authenticated(self, request, realm, idp, broker: BrokerRequest) -> BrokeredIdentity:
        """The user the provider's answer proves, checked (signature, issuer, audience, nonce,
        expiry ...); raise ``BrokerError`` otherwise. A provider's error answer (the user
        cancelled) is a ``BrokerError`` too."""
        raise NotImplementedError

    def endpoint(self, request, realm, idp, rest):
        """A request to ``/broker/{alias}/endpoint/{rest}`` other than the sign-in's answer (SAML
        metadata at ``descriptor``, an OIDC back-channel logout at ``logout_response``); None
        for 404."""
        return None

    def logout_url(self, request, realm, idp, notes, return_url) -> str:
        """Where to send the browser to end the provider's session too, when our SSO session
        signed in through it ends by a browser logout ("" when the type or the provider's config
        has no front-channel logout). ``notes`` are the ``session_notes`` the identity left on the
        SSO session (the ID token, the NameID); the provider must send the browser back to
        ``return_url`` (the broker's ``endpoint/logout_response``, carrying its own state)."""
        return ""

    def backchannel_logout(self, realm, idp, notes):
        """Tell the provider, server to server, that the SSO session signed in through it ended
        (where its config says it supports that); ``notes`` as for ``logout_url``."""

    def exchange_external_token(self, realm, idp, token: str, token_type: str) -> BrokeredIdentity:
        """The user a token the provider issued proves (legacy token exchange, RFC 8693 with
        ``subject_issuer``): the type checks it its own way; raise ``BrokerError`` otherwise. The
        default refuses: a type exchanges nothing unless it says how to check its tokens."""
        raise BrokerError(error="invalid_token", detail=f"{self.provider_id} tokens cannot be exchanged")

    def stored_token(self, idp, token: str):
        """(body, content type) the broker's token endpoint answers for a stored ``token``."""
        return token, "application/json"


_types = Registry("identity provider types")


def register_provider_type(provider_type):
    return _types.add_instance(provider_type, "provider_id")


def get_provider_type(provider_id):
    return _types.get(provider_id)


def provider_types():
    """Every registered type, by provider id (server info, the console, the Admin API)."""
    return _types.by_key()
