"""Create, read, update and delete a client through the registration service, as Keycloak's
AbstractClientRegistrationProvider does for both of its providers (``default`` speaks
ClientRepresentation, ``openid-connect`` RFC 7591 metadata converted to one).

The client is built by the representation code the Admin API and import use
(``realms.representation.clients``). A creation answers the client's secret and a new
registration access token; an update through a registration access token rotates it (the one
presented is dead from then on); a read answers the token presented. An initial access token's
remaining count is taken in the transaction that creates the client, guarded so that two
concurrent registrations cannot both spend its last use."""
import uuid
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import F

from realms.http.web import client_address
from realms.models import Client, ClientScope, ClientScopeLink, ProtocolMapper
from realms.representation import RepresentationError
from realms.representation.clients import add_attribute_parts, attribute_parts, client_rep, parse_client
from realms.representation.fields import Parser
from realms.representation.protocol_mappers import check_mapper
from realms.representation.services import add_default_client_scopes
from realms.users.accounts import enable_service_account

from .. import client_policies, tokens
from ..errors import InvalidClientMetadata, InvalidRedirectUri
from ..models import ClientInitialAccess
from . import auth as auth_
from . import policies


@dataclass
class Context:
    request: object
    realm_config: object
    issuer: str
    endpoint: str  # "default" or "openid-connect"
    details: dict = field(default_factory=dict)

    @property
    def realm(self):
        return self.realm_config.realm

    @property
    def ip_address(self):
        return client_address(self.request)


def _metadata_error(message):
    return InvalidClientMetadata(message, event_error="invalid_client_metadata")


def _uri_ok(value):
    try:
        parts = urlsplit(value)
    except ValueError:
        return False
    return bool(parts.scheme) and parts.scheme.lower() not in ("javascript", "data")


def validate(client):
    """Keycloak's client validation: redirect URIs (``invalid_redirect_uri``), the other URLs."""
    for uri in client.redirect_uris or []:
        if not isinstance(uri, str) or not uri or ("*" not in uri and not uri.startswith("/") and not _uri_ok(uri)):
            raise InvalidRedirectUri("A redirect URI is not a valid URI", event_error="invalid_redirect_uri")
        if "#" in uri:
            raise InvalidRedirectUri("Redirect URIs must not contain an URI fragment",
                                     event_error="invalid_redirect_uri")
    attrs = client.attributes or {}
    for value, message in ((client.root_url, "Root URL is not a valid URL"),
                           (client.base_url if not (client.base_url or "").startswith("/") else "",
                            "Base URL is not a valid URL"),
                           (attrs.get("logoUri"), "Logo URL is not a valid URL"),
                           (attrs.get("policyUri"), "Policy URL is not a valid URL"),
                           (attrs.get("tosUri"), "Terms of service URL is not a valid URL"),
                           (attrs.get("jwks.url") if attrs.get("use.jwks.url") == "true" else "",
                            "JWKS URL is not a valid URL")):
        if value and not _uri_ok(value):
            raise _metadata_error(message)
    for uri in (attrs.get("post.logout.redirect.uris") or "").split("##"):
        if uri and uri != "+" and "*" not in uri and not _uri_ok(uri):
            raise InvalidRedirectUri("A post logout redirect URI is not a valid URI",
                                     event_error="invalid_redirect_uri")
    try:
        client.full_clean(exclude=["realm"], validate_unique=False, validate_constraints=False)
    except ValidationError as exc:
        name, messages = next(iter(exc.message_dict.items()))
        raise _metadata_error(f"{name}: {' '.join(messages)}") from None


def _parse(rep, client=None):
    """``client``: the one updated, whose attribute parts (a Shared Signals stream) may come back
    unchanged, as its GET gave them."""
    rep = {k: v for k, v in rep.items() if k not in ("id", "registrationAccessToken", "access")}
    try:
        return parse_client(rep, "", Parser(), parts=attribute_parts(client) if client else None)
    except RepresentationError as exc:
        raise _metadata_error(str(exc)) from None


def _link(client, names, default):
    scopes = ClientScope.objects.filter(realm=client.realm, name__in=names or [], protocol=client.protocol)
    for scope in scopes:  # unknown names are ignored, as Keycloak does
        ClientScopeLink.objects.update_or_create(client=client, client_scope=scope, defaults={"default": default})


def _mappers(client, parsed):
    for m in parsed["mappers"]:
        mapper = ProtocolMapper(client=client, **{k: v for k, v in m["fields"].items() if k != "id"})
        try:
            check_mapper(mapper, "")
        except RepresentationError as exc:
            raise _metadata_error(str(exc)) from None
        mapper.save()


def _updater(auth):
    """Who writes the client, as Keycloak's client-updater-context condition names it."""
    return {auth_.INITIAL: "ByInitialAccessToken", auth_.REGISTRATION: "ByRegistrationAccessToken",
            tokens.TYP_BEARER: "ByAuthenticatedUser"}.get(auth.typ, "ByAnonymous")


def find(ctx, client_id):
    client = Client.objects.filter(realm=ctx.realm, client_id=client_id).first()
    if client is not None:
        client.realm = ctx.realm  # read already: the representation's parts are not a query for it
    return client


def create(ctx, rep, authenticator_given=None):
    """(client, its representation with secret and registration access token).
    ``authenticator_given``: whether the request chose the client authenticator (a client policy
    may choose it otherwise); by default, whether ``rep`` names one."""
    auth = auth_.read(ctx.request, ctx.realm_config, ctx.issuer)
    kind = auth_.require_create(auth)
    rep = {**rep, "clientId": rep.get("clientId") or str(uuid.uuid4())}
    parsed = _parse(rep)  # the types checked before any policy reads the representation
    policies.before(ctx, kind, "register", rep)
    fields = parsed["fields"]
    fields.pop("id", None)
    client = Client(realm=ctx.realm, **fields)
    if parsed["secret"]:
        client.set_secret(parsed["secret"])
    elif client.confidential and client.client_authenticator_type in ("client-secret", "client-secret-jwt"):
        client.regenerate_secret()
    validate(client)
    if authenticator_given is None:
        authenticator_given = "clientAuthenticatorType" in rep
    client_policies.on_client_write(client_policies.REGISTER, ctx.realm, client, updater=_updater(auth),
                                    authenticator_given=authenticator_given)
    ctx.details["client_auth_method"] = client.client_authenticator_type
    try:
        with transaction.atomic():
            if auth.initial is not None and not ClientInitialAccess.objects.filter(
                    pk=auth.initial.pk, remaining_count__gt=0).update(remaining_count=F("remaining_count") - 1):
                raise auth_.unauthorized("No remaining count on initial access token")
            if Client.objects.filter(realm=ctx.realm, client_id=client.client_id).exists():
                raise _metadata_error("Client Identifier in use")
            client.save()
            _mappers(client, parsed)
            if parsed["default_scopes"] is None:
                add_default_client_scopes(client)
            _link(client, parsed["default_scopes"], True)
            _link(client, parsed["optional_scopes"], False)
            if client.service_accounts_enabled:
                enable_service_account(client)
            policies.after_register(ctx, kind, client)
            token = auth_.new_registration_access_token(ctx.realm, ctx.issuer, client, kind)
            client.save(update_fields=["registration_access_token"])
    except IntegrityError:
        raise _metadata_error("Client Identifier in use") from None
    return client, _rep(client, token)


def _rep(client, token):
    """Keycloak's ClientRepresentation of the client, with the attributes other apps keep in rows
    (a receiver's Shared Signals stream), as the Admin API's GET (decision 0103)."""
    rep = client_rep(client)
    add_attribute_parts(client.realm, [rep])
    rep.pop("registrationAccessToken", None)
    if not client.confidential:
        rep.pop("secret", None)
    if token:
        rep["registrationAccessToken"] = token
    return rep


def read(ctx, client_id):
    client = find(ctx, client_id)
    auth = auth_.read(ctx.request, ctx.realm_config, ctx.issuer)
    kind = auth_.require_view(auth, client, ctx.endpoint)
    policies.before(ctx, kind, "view", client=client)
    token = ctx.request.headers["Authorization"].split(" ")[1] if auth.typ == auth_.REGISTRATION else None
    return client, _rep(client, token)


def update(ctx, client_id, rep):
    client = find(ctx, client_id)
    auth = auth_.read(ctx.request, ctx.realm_config, ctx.issuer)
    kind = auth_.require_update(auth, client, ctx.endpoint)
    if rep.get("clientId") != client.client_id:
        raise _metadata_error("Client Identifier modified")
    parsed = _parse(rep, client)
    policies.before(ctx, kind, "update", rep, client)
    fields = parsed["fields"]
    fields.pop("id", None)
    attributes = fields.pop("attributes", None)
    for name, value in fields.items():
        setattr(client, name, value)
    if attributes is not None:  # merged, as Keycloak's updateClient does
        client.attributes = {**client.attributes, **attributes}
    if parsed["secret"]:
        client.set_secret(parsed["secret"])
    elif client.confidential and not client.secret_digest:
        client.regenerate_secret()
    validate(client)
    client_policies.on_client_write(client_policies.UPDATE, ctx.realm, client, updater=_updater(auth),
                                    authenticator_given="clientAuthenticatorType" in rep)
    with transaction.atomic():
        token = None
        if auth.typ == auth_.REGISTRATION:
            token = auth_.new_registration_access_token(ctx.realm, ctx.issuer, client, auth.registration_auth)
        client.save()
        if rep.get("protocolMappers") is not None:
            client.protocol_mappers.all().delete()
            _mappers(client, parsed)
        for names, default in ((parsed["default_scopes"], True), (parsed["optional_scopes"], False)):
            if names is not None:
                client.scope_links.filter(default=default).exclude(client_scope__name__in=names).delete()
                _link(client, names, default)
        if client.service_accounts_enabled:
            enable_service_account(client)
    return client, _rep(client, token)


def delete(ctx, client_id):
    client = find(ctx, client_id)
    auth = auth_.read(ctx.request, ctx.realm_config, ctx.issuer)
    kind = auth_.require_update(auth, client, ctx.endpoint)
    policies.before(ctx, kind, "delete", client=client)
    client.delete()
