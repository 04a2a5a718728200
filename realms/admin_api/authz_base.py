"""The base of the ``clients/{id}/authz/resource-server`` routes (``realms.admin_api.authz``,
``authz_evaluation``): the client's resource server, the admin-permissions client's schema, the
roles each method needs, and how a change is written (checked, locked, an admin event)."""
import copy

from ..administration.admin_permissions import PERMISSIONS_CLIENT, SCHEMA
from ..audit import admin_events
from ..authz.evaluation import Server
from ..authz.policies import config_list
from ..models import Client
from ..representation import RepresentationError
from ..representation.authorization import NOT_SUPPORTED, check_admin_permissions, schema_settings
from ..representation.resource_server import NameTaken, write
from . import errors
from .views import RealmResource

BASE = "clients/<str:client_uuid>/authz/resource-server"


class AuthzResource(RealmResource):
    required_role = {"GET": "view-authorization", "POST": "manage-authorization", "PUT": "manage-authorization",
                     "DELETE": "manage-authorization"}

    schema = False  # the admin-permissions client: its settings follow the admin-permissions schema

    def server(self):
        client = Client.objects.filter(realm=self.realm, pk=self.kwargs["client_uuid"]).first()
        if client is None:
            raise errors.NotFound("Could not find client")
        if not client.authorization_services_enabled:
            raise errors.NotFound("HTTP 404 Not Found")
        if client.client_id == PERMISSIONS_CLIENT:
            self.schema, self.server_client = True, client
            return Server(client, schema_settings(client, copy.deepcopy(client.authorization_settings)))
        return Server(client, client.authorization_settings)

    def refuse_on_schema(self):
        """Keycloak's throwExceptionIfAdminPermissionClient: the admin-permissions client's
        resources and scopes are the schema's (and the objects its permissions name)."""
        if self.schema:
            raise errors.Invalid(NOT_SUPPORTED)

    def change(self, server, change, kind, path, representation=None, operation="UPDATE"):
        if self.schema:
            change = self._schema_change(change)
        try:
            result = write(server.client, change)
        except NameTaken as exc:
            raise errors.Conflict(exc.message) from None
        except RepresentationError as exc:
            raise errors.Invalid(str(exc)) from None
        admin_events.record(self.realm, operation, kind, f"clients/{server.client.pk}/authz/resource-server{path}",
                            auth=self.auth_details(), representation=representation)
        return result

    def _schema_change(self, change):
        """A change of the admin-permissions client: on the schema's resources and scopes, the
        resources of objects no permission names any more removed (Keycloak's
        removeOrphanResources), checked as an import of them would be. The Admin API's decisions
        read the settings at each request, so it takes effect at once."""
        def schema_change(settings):
            schema_settings(self.server_client, settings)
            result = change(settings)
            named = {n for p in settings["policies"] if p["type"] == "scope" for n in config_list(p, "resources")}
            settings["resources"] = [r for r in settings["resources"] if r["name"] in SCHEMA or r["name"] in named]
            check_admin_permissions(self.realm, self.server_client, settings)
            return result
        return schema_change


def _body(request):
    if not isinstance(request.data, dict):
        raise errors.Invalid("Expected a JSON object")
    return request.data


def _page(request, items):
    first = int(request.query_params.get("first") or 0)
    size = int(request.query_params.get("max") or -1)
    return items[first:] if size < 0 else items[first:first + size]
