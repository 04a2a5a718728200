"""``/admin/realms/{realm}/clients`` (Keycloak's ClientsResource and ClientResource): list with
``clientId``, ``search``, ``first`` and ``max``; CRUD; ``client-secret`` (read, regenerate) and
``service-account-user``. Clients in the export's JSON (``client_rep``, parsed by
``parse_client``); client roles are in ``roles``. Admin events never carry the secret."""
from django.db import transaction
from rest_framework import status
from rest_framework.response import Response

from ..administration.admin_permissions import visible
from ..audit import admin_events
from ..models import Client, ClientScope, ClientScopeLink, ProtocolMapper
from ..representation import RepresentationError
from ..representation.client_policies import client_write_refusal
from ..representation.clients import add_attribute_parts, attribute_parts, client_rep, client_reps, parse_client
from ..representation.fields import Parser
from ..representation.protocol_mappers import check_mapper
from ..representation.services import add_default_client_scopes
from ..representation.users import user_fields_rep
from ..users.accounts import enable_service_account
from . import errors
from .query import check_fields, flag, location, page
from .views import RealmResource


def _public_rep(client):
    """What an admin event may carry: the representation without the secret."""
    return {k: v for k, v in client_rep(client).items() if k != "secret"}


def _rep(realm, clients):
    """As Keycloak's, with the attributes other apps keep in rows (a Shared Signals stream), so a
    GET, changed and PUT back, sends them unchanged."""
    reps = client_reps(clients)
    add_attribute_parts(realm, reps)
    return reps


def _parse(data, client=None):
    if not isinstance(data, dict):
        raise errors.Invalid("Expected a ClientRepresentation")
    body = data if client is None or "clientId" in data else {**data, "clientId": client.client_id}
    try:
        parsed = parse_client(body, "", Parser(), parts=attribute_parts(client) if client else None)
    except RepresentationError as exc:
        raise errors.Invalid(str(exc)) from None
    parsed["fields"].pop("id", None)
    return parsed


def _check_policies(realm, client, data, *, created):
    """The realm's client policies auto-configure the client or refuse it (Keycloak's 400
    ``{"error": ..., "error_description": ...}`` of a ClientPolicyException)."""
    refusal = client_write_refusal(realm, client, created=created,
                                   authenticator_given="clientAuthenticatorType" in data)
    if refusal:
        raise errors.BadRequest(*refusal)


def _link_scopes(client, names, default):
    for name in names:
        scope = ClientScope.objects.filter(realm=client.realm, name=name).first()
        if scope is None:
            raise errors.Invalid(f"Client scope {name} not found")
        ClientScopeLink.objects.get_or_create(client=client, client_scope=scope, defaults={"default": default})


def _client(realm, uuid):
    client = Client.objects.filter(realm=realm, pk=uuid).first()
    if client is None:
        raise errors.NotFound("Could not find client")
    return client


class Clients(RealmResource):
    """GET needs ``query-clients`` and lists the clients the caller may view: every one with
    ``view-clients``, else those fine-grained permissions let them view (none without them, as
    Keycloak 26.2). POST needs ``manage-clients``."""

    required_role = {"GET": "query-clients", "POST": "manage-clients"}

    def get(self, request, realm):
        clients = Client.objects.filter(realm=self.realm).order_by("client_id")
        wanted = request.query_params.get("clientId")
        if wanted:
            clients = (clients.filter(client_id__icontains=wanted) if flag(request, "search", False)
                       else clients.filter(client_id=wanted))
        clients = visible(request.user.admin, self.realm, "Clients", clients)
        return Response(_rep(self.realm, page(request, clients)))

    def post(self, request, realm):
        parsed = _parse(request.data)
        fields = parsed["fields"]
        if Client.objects.filter(realm=self.realm, client_id=fields["client_id"]).exists():
            raise errors.Conflict(f"Client {fields['client_id']} already exists")
        client = Client(realm=self.realm, **fields)
        if parsed["secret"]:
            client.set_secret(parsed["secret"])
        elif client.confidential and client.client_authenticator_type in ("client-secret", "client-secret-jwt"):
            client.regenerate_secret()  # as Keycloak does for a confidential client without one
        check_fields(client)
        _check_policies(self.realm, client, request.data, created=True)
        with transaction.atomic():
            client.save()
            for m in parsed["mappers"]:
                mapper = ProtocolMapper(client=client, **{k: v for k, v in m["fields"].items() if k != "id"})
                _check_mapper(mapper, m["_path"])
                mapper.save()
            if parsed["default_scopes"] is None and parsed["optional_scopes"] is None:
                add_default_client_scopes(client)
            _link_scopes(client, parsed["default_scopes"] or [], True)
            _link_scopes(client, parsed["optional_scopes"] or [], False)
            if client.service_accounts_enabled:
                enable_service_account(client)
            admin_events.record(self.realm, "CREATE", "CLIENT", f"clients/{client.pk}", auth=self.auth_details(),
                                representation=lambda: _public_rep(client))
        return Response(status=status.HTTP_201_CREATED,
                        headers={"Location": location(request, f"{self.realm.name}/clients/{client.pk}")})


def _check_mapper(mapper, path):
    try:
        check_mapper(mapper, path)
    except RepresentationError as exc:
        raise errors.Invalid(str(exc)) from None


class ClientDetail(RealmResource):
    required_role = {"GET": "view-clients", "PUT": "manage-clients", "DELETE": "manage-clients"}

    def get(self, request, realm, client_uuid):
        return Response(_rep(self.realm, [_client(self.realm, client_uuid)])[0])

    def put(self, request, realm, client_uuid):
        client = _client(self.realm, client_uuid)
        parsed = _parse(request.data, client)
        fields = parsed["fields"]
        if fields["client_id"] != client.client_id and Client.objects.filter(
                realm=self.realm, client_id=fields["client_id"]).exists():
            raise errors.Conflict(f"Client {fields['client_id']} already exists")
        uris = (client.root_url, client.redirect_uris)
        for name, value in fields.items():
            setattr(client, name, value)
        if parsed["secret"]:
            client.set_secret(parsed["secret"])
        elif client.confidential and not client.secret_digest:  # made confidential: it needs a secret
            client.regenerate_secret()
        check_fields(client)
        if (client.root_url, client.redirect_uris) != uris:
            for mapper in client.protocol_mappers.all():  # a pairwise mapper's sector must still fit
                _check_mapper(mapper, "")
        _check_policies(self.realm, client, request.data, created=False)
        with transaction.atomic():
            client.save()
            if client.service_accounts_enabled:
                enable_service_account(client)
            admin_events.record(self.realm, "UPDATE", "CLIENT", f"clients/{client.pk}", auth=self.auth_details(),
                                representation=lambda: _public_rep(client))
        return Response(status=status.HTTP_204_NO_CONTENT)

    def delete(self, request, realm, client_uuid):
        client = _client(self.realm, client_uuid)
        with transaction.atomic():
            admin_events.record(self.realm, "DELETE", "CLIENT", f"clients/{client.pk}", auth=self.auth_details())
            client.delete()
        return Response(status=status.HTTP_204_NO_CONTENT)


class ClientSecret(RealmResource):
    """Keycloak's CredentialRepresentation ``{"type": "secret", "value": ...}``: GET reads it, POST
    makes a new one."""

    required_role = {"GET": "view-clients", "POST": "manage-clients"}

    def _confidential(self, client_uuid):
        client = _client(self.realm, client_uuid)
        if not client.confidential:
            raise errors.Invalid(f"Client {client.client_id} is public or bearer-only: it has no secret")
        return client

    def get(self, request, realm, client_uuid):
        return Response({"type": "secret", "value": self._confidential(client_uuid).get_secret()})

    def post(self, request, realm, client_uuid):
        client = self._confidential(client_uuid)
        with transaction.atomic():
            secret = client.regenerate_secret()
            client.save(update_fields=["secret_encrypted", "secret_digest"])
            admin_events.record(self.realm, "ACTION", "CLIENT", f"clients/{client.pk}/client-secret",
                                auth=self.auth_details())
        return Response({"type": "secret", "value": secret})


class ServiceAccountUser(RealmResource):
    required_role = "view-clients"

    def get(self, request, realm, client_uuid):
        client = _client(self.realm, client_uuid)
        user = getattr(client, "service_account_user", None) if client.service_accounts_enabled else None
        if user is None:
            raise errors.Invalid(f"Service account not enabled for the client '{client.client_id}'")
        return Response(user_fields_rep(user))
