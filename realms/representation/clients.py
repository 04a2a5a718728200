"""Clients: fields, parsing, import and export."""
from django.db.models import Prefetch, prefetch_related_objects

from .. import features
from ..models import Client, ClientScopeLink
from ..registry import Registry
from .authorization import parse_authorization, resolve_authorization
from .fields import (
    RepresentationError,
    as_bool,
    as_dict,
    as_int,
    as_list,
    as_str,
    as_str_list,
    as_str_map,
    json_fields,
    model_fields,
    spec_of,
)
from .protocol_mappers import mapper_reps, parse_mapper

_CLIENT_FIELDS = {
    "id": ("id", as_str),
    "clientId": ("client_id", as_str),
    "name": ("name", as_str),
    "description": ("description", as_str),
    "enabled": ("enabled", as_bool),
    "alwaysDisplayInConsole": ("always_display_in_console", as_bool),
    "protocol": ("protocol", as_str),
    "publicClient": ("public_client", as_bool),
    "bearerOnly": ("bearer_only", as_bool),
    "clientAuthenticatorType": ("client_authenticator_type", as_str),
    "registrationAccessToken": ("registration_access_token", as_str),
    "standardFlowEnabled": ("standard_flow_enabled", as_bool),
    "implicitFlowEnabled": ("implicit_flow_enabled", as_bool),
    "directAccessGrantsEnabled": ("direct_access_grants_enabled", as_bool),
    "serviceAccountsEnabled": ("service_accounts_enabled", as_bool),
    "authorizationServicesEnabled": ("authorization_services_enabled", as_bool),
    "consentRequired": ("consent_required", as_bool),
    "fullScopeAllowed": ("full_scope_allowed", as_bool),
    "frontchannelLogout": ("frontchannel_logout", as_bool),
    "surrogateAuthRequired": ("surrogate_auth_required", as_bool),
    "rootUrl": ("root_url", as_str),
    "baseUrl": ("base_url", as_str),
    "adminUrl": ("admin_url", as_str),
    "redirectUris": ("redirect_uris", as_str_list),
    "webOrigins": ("web_origins", as_str_list),
    "attributes": ("attributes", as_str_map),
    "authenticationFlowBindingOverrides": ("authentication_flow_binding_overrides", as_str_map),
    "nodeReRegistrationTimeout": ("node_re_registration_timeout", as_int),
    "notBefore": ("not_before", as_int),
}
_CLIENT_EXTRA = {
    "secret": as_str,
    "protocolMappers": as_list,
    "defaultClientScopes": as_str_list,
    "optionalClientScopes": as_str_list,
    "defaultRoles": as_str_list,
    "authorizationSettings": as_dict,
}
# Keys Keycloak computes from other data.
_DERIVED = {"access"}
# A protocol's checks of the client attributes it reads (name -> check(protocol, attributes) ->
# the refusal's message or None), filled from its AppConfig.ready(): an import or the Admin API
# refuses a value the protocol cannot honour instead of keeping a setting that does nothing.
_attribute_checks = Registry("client attribute checks")


def register_attribute_check(name, check):
    _attribute_checks.add(name, check)


# What an app keeps in rows of its own but Keycloak keeps in a client's attributes (name ->
# (keys, export, load, feature)), filled from its AppConfig.ready(): ``export(realm)`` gives
# {client id: the attributes to add to that client's representation}, read by the export, the
# Admin API and client registration alike; ``load(client)`` turns those attributes of a client just
# imported into its rows (and takes them off the client), or returns the refusal's message. A
# client update (Admin API, registration) may send them back unchanged, as Keycloak's clients do
# after a GET; changed, or in a new client, they are refused: the rows are the app's to change
# through its API. ``feature``: the server feature (``realms.features``) the rows serve; while it
# is off, a client's GET leaves the part out without reading them.
_attribute_parts = Registry("client attribute parts")


def register_attribute_part(name, keys, export, load, feature=None):
    _attribute_parts.add(name, (frozenset(keys), export, load, feature))


def _parts_by_client(realm, dormant):
    out = {}
    for _keys, export, _load, feature in _attribute_parts.by_key():
        if feature and not dormant and not features.enabled(feature):
            continue
        for client_id, attributes in export(realm).items():
            out.setdefault(client_id, {}).update(attributes)
    return out


def add_attribute_parts(realm, client_reps, *, dormant=False):
    """The registered parts of ``realm``'s clients, into their representations' ``attributes``.
    ``dormant``: those of a feature switched off too (the export: a realm moved keeps its rows)."""
    parts = _parts_by_client(realm, dormant)
    for rep in client_reps:
        if rep["id"] in parts:
            rep.setdefault("attributes", {}).update(parts[rep["id"]])


def attribute_parts(client):
    """The registered parts of one client, as the attributes its representation carries (the
    dormant ones too: what an update may send back unchanged)."""
    return _parts_by_client(client.realm, True).get(client.pk, {})


def parse_client(c, path, p, *, imported=False, parts=None):
    """``imported``: a realm or partial import, whose clients may carry the attribute parts.
    Otherwise ``parts`` are the client's parts now (``attribute_parts``): given unchanged they are
    taken off the attributes, any other value refused."""
    values = p.take(c, path, spec_of(_CLIENT_FIELDS, _CLIENT_EXTRA), derived=_DERIVED,
                    required=("clientId",))
    attributes_path = f"{path}.attributes" if path else "attributes"
    attributes = values.get("attributes") or {}
    for name, (keys, _export, _load, _feature) in sorted(_attribute_parts.items()) if not imported else ():
        changed = sorted(k for k in keys & set(attributes) if attributes[k] != (parts or {}).get(k))
        if changed:
            raise RepresentationError(attributes_path, f"{changed[0]} cannot be changed here: it belongs to the {name}")
        for key in keys:
            attributes.pop(key, None)
    for check in _attribute_checks.by_key():
        refusal = check(values.get("protocol") or "openid-connect", attributes)
        if refusal:
            raise RepresentationError(attributes_path, refusal)
    authorization = _authorization(values, path, p)
    return {
        "_path": path,
        "fields": model_fields(_CLIENT_FIELDS, values),
        "secret": values.get("secret"),
        "mappers": [parse_mapper(m, f"{path}.protocolMappers[{i}]", p)
                    for i, m in enumerate(values.get("protocolMappers", []))],
        "default_scopes": values.get("defaultClientScopes"),
        "optional_scopes": values.get("optionalClientScopes"),
        "default_roles_old": values.get("defaultRoles", []),
        "authorization": authorization,
    }


def _authorization(values, path, p):
    """The client's authorization settings; as Keycloak, a client with authorization services
    and no settings is a resource server with none yet, and one with settings has them enabled
    unless they are switched off (the Admin API's PUT of what its GET gave, switched off)."""
    if values.get("authorizationServicesEnabled") is False:
        return None
    if "authorizationSettings" in values:
        values["authorizationServicesEnabled"] = True
        return parse_authorization(values["authorizationSettings"], f"{path}.authorizationSettings",
                                   values["clientId"], p)
    if values.get("authorizationServicesEnabled"):
        return parse_authorization({}, f"{path}.authorizationSettings", values["clientId"], p)
    return None


# What a client's representation reads beside its row: read for a whole list at once, not per client.
_PARTS = ("protocol_mappers", Prefetch(
    "scope_links", queryset=ClientScopeLink.objects.select_related("client_scope").order_by("client_scope__name")))


def client_reps(clients):
    """The representations of ``clients``, their mappers and scopes read in two statements for all."""
    clients = list(clients)
    prefetch_related_objects(clients, *_PARTS)
    return [client_rep(c, c.scope_links.all()) for c in clients]


def client_rep(c, links=None):
    """``links``: the client's scope links with their scopes, when read already (client_reps)."""
    crep = {k: v for k, v in json_fields(c, _CLIENT_FIELDS).items()
            if v != "" or k not in ("registrationAccessToken", "name", "description")}
    secret = c.get_secret()
    if secret:
        crep["secret"] = secret
    crep["protocolMappers"] = mapper_reps(c.protocol_mappers.all())
    if links is None:
        links = c.scope_links.select_related("client_scope").order_by("client_scope__name")
    crep["defaultClientScopes"] = [x.client_scope.name for x in links if x.default]
    crep["optionalClientScopes"] = [x.client_scope.name for x in links if not x.default]
    if c.authorization_settings:
        crep["authorizationSettings"] = c.authorization_settings
    return crep


class ClientApplier:
    """The importer's steps for clients (a part of importer._Applier)."""

    def client(self, client_id, path):
        try:
            return self.clients[client_id]
        except KeyError:
            raise RepresentationError(path, f"unknown client {client_id!r}") from None

    def add_client(self, c):
        fields = dict(c["fields"])
        fields["id"] = self.id_for(Client, fields.get("id"))
        client = Client(realm=self.realm, **fields)
        if c["secret"]:
            client.set_secret(c["secret"])
        elif client.confidential and client.client_authenticator_type in ("client-secret", "client-secret-jwt"):
            client.regenerate_secret()  # as Keycloak does for a confidential client without one
        self.save(client, c["_path"], _CLIENT_FIELDS)
        for _keys, _export, load, _feature in _attribute_parts.by_key():
            refusal = load(client)
            if refusal:
                raise RepresentationError(f"{c['_path']}.attributes" if c["_path"] else "attributes", refusal)
        self.clients[client.client_id] = client
        self.add_mappers(c["mappers"], client=client)
        if c["authorization"] is not None:
            self.authorization.append((client, c["authorization"], f"{c['_path']}.authorizationSettings"))

    def add_authorization(self):
        """Last: the permissions name the realm's groups, users, clients and roles."""
        for client, settings, path in self.authorization:
            client.authorization_settings = resolve_authorization(self.realm, client, settings, path, self.renamed)
            client.save(update_fields=["authorization_settings"])
