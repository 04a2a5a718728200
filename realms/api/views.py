"""The base views of every API resource."""
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.renderers import JSONRenderer
from rest_framework.views import APIView

from .. import rows
from ..admin_events import AuthDetails, auth_details
from ..models import Client, Group, Realm, User
from . import errors
from .authentication import BearerAuthentication
from .parsers import JSONParser
from .permissions import RealmRole


class JSONOnly(BaseContentNegotiation):
    """JSON whatever the Accept header says (Keycloak's admin API answers JSON to browsers too)."""

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class ApiView(APIView):
    """Bearer token, JSON in (depth-limited) and out, Keycloak's error shape."""

    authentication_classes = (BearerAuthentication,)
    permission_classes = ()
    parser_classes = (JSONParser,)
    renderer_classes = (JSONRenderer,)
    content_negotiation_class = JSONOnly

    def get_exception_handler(self):
        return errors.exception_handler


class RealmResource(ApiView):
    """A resource below ``/admin/realms/<realm>/``: ``self.realm`` is the realm (404 "Realm not
    found." before any role check, as in Keycloak) and ``required_role`` is enforced."""

    permission_classes = (RealmRole,)
    required_role = None  # each resource names its role(s); none named, nothing allowed
    # {method: [(resource type, scope, path argument)]} where Keycloak checks other scopes than
    # the role's own on the objects of the path (e.g. a user's "map-roles" to map roles).
    fine_grained = {}
    _OBJECTS = (("user_id", User), ("group_id", Group), ("client_uuid", Client))
    _KINDS = {"Users": User, "Groups": Group, "Clients": Client}

    def permission_targets(self, method, role):
        """[(action, object)] that fine-grained admin permissions decide this request on; empty
        for a collection (decided for the whole type). An object not found is None (only a
        permission on every object of its type may then let the request reach its 404)."""
        given = self.fine_grained.get(method)
        if given is not None:
            return [((kind, scope), self._object(self._KINDS[kind], arg)) for kind, scope, arg in given]
        for arg, model in self._OBJECTS:
            if arg in self.kwargs:
                return [(role, self._object(model, arg))]
        return []

    def _object(self, model, arg):
        return model.objects.filter(realm=self.realm, pk=self.kwargs.get(arg)).first()

    def check_permissions(self, request):
        # Raw (``realms.rows``): every Admin API request reads the row, of 80 columns.
        self.realm = next(iter(rows.fetch(Realm, "name = %s", [self.kwargs["realm"]])), None)
        if self.realm is None:
            raise errors.NotFound("Realm not found.")
        super().check_permissions(request)

    def auth_details(self) -> AuthDetails:
        """The caller, for the admin events of the changes this request makes."""
        return auth_details(self.request, self.request.user.user, self.request.user.client_id)


class NoRoute(ApiView):
    """Any other path under the API's prefix: 401 without a valid token, else a JSON 404."""

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        raise errors.NotFound(errors.NO_ROUTE)
