"""A SAML client's settings, read from Keycloak's client attributes.

An attribute that is absent means what Keycloak writes into a new SAML client
(SamlProtocolFactory.setupClientDefaults): responses signed (``saml.server.signature``), client
signatures required (``saml.client.signature``), POST binding forced, an AuthnStatement, NameID
format ``username``, RSA_SHA256. So an imported client without them behaves as it did in
Keycloak, and a client created here is safe by default.

The clients a request names come from the realm's cached configuration
(``realms.data.realm_cache``), each with its mappers and role scope read once: all of it is
dropped with that configuration when anything of the realm changes.
"""
import functools
from dataclasses import dataclass

from realms.data import realm_cache
from realms.http.redirects import is_valid_redirect_uri
from realms.models import Client

from . import constants as c
from . import mappers
from .errors import UntrustedRequest

_DEFAULTS = {
    c.ATTR_SERVER_SIGNATURE: True,
    c.ATTR_CLIENT_SIGNATURE: True,
    c.ATTR_FORCE_POST_BINDING: True,
    c.ATTR_AUTHNSTATEMENT: True,
    c.ATTR_ASSERTION_SIGNATURE: False,
    c.ATTR_ENCRYPT: False,
    c.ATTR_FORCE_NAME_ID_FORMAT: False,
    c.ATTR_ONETIMEUSE: False,
}


@dataclass
class SamlClient:
    client: Client

    @property
    def attributes(self):
        return self.client.attributes or {}

    def flag(self, name):
        value = self.attributes.get(name)
        if value in (None, ""):
            return _DEFAULTS[name]
        return str(value).lower() == "true"

    @functools.cached_property
    def mappers(self):
        return mappers.mappers_for(self.client)

    @functools.cached_property
    def allowed_role_ids(self):
        return mappers.allowed_role_ids(self.client)

    @property
    def entity_id(self):
        return self.client.client_id

    @property
    def name_id_format(self):
        name = self.attributes.get(c.ATTR_NAME_ID_FORMAT) or "username"
        return name if name in c.NAMEID_FORMATS else "username"

    def acs_url(self, requested_url, binding):
        """The address to send the Response to: the requested ACS URL once it is registered
        (an ACS attribute or a valid redirect URI, Keycloak's rule), else the registered one
        for the binding, else the client's admin URL. UntrustedRequest when none is usable."""
        registered = [u for u in (self.attributes.get(c.ATTR_ACS_POST), self.attributes.get(c.ATTR_ACS_REDIRECT)) if u]
        if requested_url:
            if requested_url in registered or is_valid_redirect_uri(self.client.redirect_uris, requested_url):
                return requested_url
            raise UntrustedRequest("Invalid requester: the assertion consumer service URL is not registered.",
                                   "invalid_redirect_uri", client_id=self.entity_id)
        preferred = (c.ATTR_ACS_REDIRECT, c.ATTR_ACS_POST) if binding == c.BINDING_REDIRECT else (
            c.ATTR_ACS_POST, c.ATTR_ACS_REDIRECT)
        for name in preferred:
            if self.attributes.get(name):
                return self.attributes[name]
        if self.client.admin_url:
            return self.client.admin_url
        raise UntrustedRequest("The client has no assertion consumer service URL.", "invalid_redirect_uri",
                               client_id=self.entity_id)

    def response_binding(self, requested_binding, request_binding):
        if self.flag(c.ATTR_FORCE_POST_BINDING):
            return c.BINDING_POST
        if requested_binding in (c.BINDING_POST, c.BINDING_REDIRECT):
            return requested_binding
        return request_binding

    def logout_endpoint(self, prefer_binding=c.BINDING_POST):
        """(url, binding) of the client's front-channel single logout service, or (None, None)."""
        post, redirect = self.attributes.get(c.ATTR_SLO_POST), self.attributes.get(c.ATTR_SLO_REDIRECT)
        if self.flag(c.ATTR_FORCE_POST_BINDING) or prefer_binding == c.BINDING_POST:
            order = ((post, c.BINDING_POST), (redirect, c.BINDING_REDIRECT))
        else:
            order = ((redirect, c.BINDING_REDIRECT), (post, c.BINDING_POST))
        for url, binding in order:
            if url:
                return url, binding
        if self.client.admin_url:  # Keycloak's fallback: the client's management URL
            return self.client.admin_url, c.BINDING_POST if self.flag(c.ATTR_FORCE_POST_BINDING) else c.BINDING_REDIRECT
        return None, None

    @property
    def soap_logout_url(self):
        """Back-channel logout address (Keycloak falls back to the admin URL)."""
        return self.attributes.get(c.ATTR_SLO_SOAP) or self.client.admin_url or ""

    @property
    def assertion_lifespan(self):
        try:
            return int(self.attributes.get(c.ATTR_ASSERTION_LIFESPAN) or 0)
        except ValueError:
            return 0


class SamlClients:
    """SAML's share of a realm's cached configuration: its clients as SamlClients."""

    def __init__(self, base):
        self.base = base
        self._by_pk = {}

    @functools.cached_property
    def url_names(self):
        """{IdP-initiated SSO URL name: client id} of the realm's enabled SAML clients, in one query;
        a name two clients set is the first one's (by id), as the lookup by it was before."""
        found = {}
        rows = Client.objects.filter(realm=self.base.realm, protocol=c.PROTOCOL, enabled=True,
                                     attributes__has_key=c.ATTR_IDP_INITIATED_NAME).order_by("pk")
        for pk, name in rows.values_list("pk", f"attributes__{c.ATTR_IDP_INITIATED_NAME}"):
            if isinstance(name, str) and name:
                found.setdefault(name, pk)
        return found

    def of(self, client: Client) -> SamlClient:
        """This client's SamlClient, its mappers and role scope read on first use."""
        found = self._by_pk.get(client.pk)
        if found is None:
            found = self._by_pk.setdefault(client.pk, SamlClient(client))
        return found


def cached(realm) -> SamlClients:
    return realm_cache.get_realm(realm.name).extension(c.PROTOCOL, SamlClients)


def by_pk(realm, pk):
    """The realm's SAML client with this id (enabled or not), or None."""
    clients = cached(realm)
    client = clients.base.client_by_pk(pk) if pk else None
    return clients.of(client) if client is not None and client.protocol == c.PROTOCOL else None


def by_entity_id(realm, entity_id):
    """The realm's SAML client with this entity id, or UntrustedRequest."""
    clients = cached(realm)
    client = clients.base.client(entity_id) if entity_id else None
    if client is None or client.protocol != c.PROTOCOL:
        raise UntrustedRequest("Unknown login requester.", "client_not_found", client_id=entity_id[:255])
    if not client.enabled:
        raise UntrustedRequest("Login requester not enabled.", "client_disabled", client_id=entity_id[:255])
    return clients.of(client)


def by_url_name(realm, url_name):
    """The realm's enabled SAML client whose IdP-initiated SSO URL name is ``url_name``, or
    UntrustedRequest."""
    clients = cached(realm)
    pk = clients.url_names.get(url_name) if url_name else None
    client = clients.base.client_by_pk(pk) if pk else None
    if client is None:
        raise UntrustedRequest("Unknown IdP-initiated SSO URL name.", "client_not_found")
    return clients.of(client)
