"""The base views of every API resource."""
import re

from rest_framework import exceptions
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.renderers import JSONRenderer
from rest_framework.throttling import BaseThrottle
from rest_framework.views import APIView

from ..audit.admin_events import AuthDetails, auth_details
from ..data import rows
from ..http import admission
from ..models import Client, ClientScope, Group, Realm, Role, User
from . import errors
from .authentication import BearerAuthentication, Caller
from .parsers import JSONParser
from .permissions import RealmRole


class JSONOnly(BaseContentNegotiation):
    """JSON whatever the Accept header says (Keycloak's admin API answers JSON to browsers too)."""

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class Admission(BaseThrottle):
    """The admission limits of the realm that issued the caller's token (``realms.http.admission``):
    its address, then its client. A caller without a valid token is refused before."""

    retry_after = None

    def allow_request(self, request, view):
        caller = request.user
        if not isinstance(caller, Caller):
            return True
        try:
            admission.admit(request, caller.realm, admission.ADMIN)
            admission.admit(request, caller.realm, admission.ADMIN, client_id=caller.client_id)
        except admission.RateLimited as exc:
            self.retry_after = exc.retry_after
            return False
        return True

    def wait(self):
        return self.retry_after


class ApiView(APIView):
    """Bearer token, JSON in (depth-limited) and out, Keycloak's error shape."""

    authentication_classes = (BearerAuthentication,)
    permission_classes = ()
    throttle_classes = (Admission,)
    parser_classes = (JSONParser,)
    renderer_classes = (JSONRenderer,)
    content_negotiation_class = JSONOnly

    def get_exception_handler(self):
        return errors.exception_handler


# The object a path addresses by the id after its first segment (``users/{id}/...``), looked up
# before any other check as Keycloak's sub-resource locators do: (model, the 404's message, the
# role whose holder is told that the id does not exist; anyone else is refused, 403, so that ids
# cannot be probed). None: anyone is told (Keycloak's GroupsResource and RoleByIdResource).
LOCATED = {
    "users": (User, "User not found", "query-users"),
    "groups": (Group, "Could not find group by id", None),
    "clients": (Client, "Could not find client", "query-clients"),
    "client-scopes": (ClientScope, "Could not find client scope", "query-clients"),
    "roles-by-id": (Role, "Could not find role with id", None),
}
_LOCATED_ROUTE = re.compile(r"<str:realm>/([\w-]+)/<(?:\w+:)?(\w+)>")


class RealmResource(ApiView):
    """A resource below ``/admin/realms/<realm>/``: ``self.realm`` is the realm (404 "Realm not
    found." before any role check, as in Keycloak), the object the path addresses exists
    (``LOCATED``) and ``required_role`` is enforced."""

    permission_classes = (RealmRole,)
    required_role = None  # each resource names its role(s); none named, nothing allowed
    # {method: [(resource type, scope, path argument)]} where Keycloak checks other scopes than
    # the role's own on the objects of the path (e.g. a user's "map-roles" to map roles).
    fine_grained = {}
    _OBJECTS = (("user_id", User), ("group_id", Group), ("client_uuid", Client))
    _KINDS = {"Users": User, "Groups": Group, "Clients": Client}
    _located = None  # the object the path addresses, found by ``locate``

    def permission_targets(self, method, role):
        """[(action, object)] that fine-grained admin permissions decide this request on; empty
        for a collection (decided for the whole type). The object a path addresses exists
        (``locate``); another not found is None (only a permission on every object of its type
        may then let the request reach its 404)."""
        given = self.fine_grained.get(method)
        if given is not None:
            targets = [((kind, scope), self.row(self._KINDS[kind], self.kwargs.get(arg))) for kind, scope, arg in given]
            # Keycloak looks an object below the path's first up after checking the ones above
            # it: one not found is left to the handler's 404.
            return targets[:1] + [t for t in targets[1:] if t[1] is not None]
        for arg, model in self._OBJECTS:
            if arg in self.kwargs:
                return [(role, self.row(model, self.kwargs[arg]))]
        return []

    def row(self, model, pk):
        """The realm's ``model`` row with id ``pk``, or None. The object the path addresses was
        read by ``locate`` and is not read again; a row's ``realm`` is this request's (its 80
        columns are not read again either)."""
        located = self._located
        if located is not None and type(located) is model and str(located.pk) == str(pk):
            return located
        found = model.objects.filter(realm=self.realm, pk=pk).first()
        if found is not None:
            found.realm = self.realm
        return found

    def initial(self, request, *args, **kwargs):
        # Every Admin API request reads the realm's row (80 columns: raw, ``realms.data.rows``); it
        # goes in the round trip of the bearer check's read of the caller.
        with rows.ahead(Realm, "name = %s", [kwargs["realm"]]) as self._realm_row:
            super().initial(request, *args, **kwargs)

    def check_permissions(self, request):
        self.realm = next(iter(self._realm_row.result()), None)
        if self.realm is None:
            raise errors.NotFound("Realm not found.")
        self.locate(request)
        super().check_permissions(request)

    def locate(self, request):
        """An id the path addresses that does not exist (``LOCATED``): 404 with Keycloak's message,
        or 403 to a caller who may not list that kind of object. A caller of another realm than
        this one or master is left to the role check (403), as Keycloak refuses them first."""
        match = _LOCATED_ROUTE.search(request.resolver_match.route)
        if match is None or match[1] not in LOCATED or not hasattr(self, request.method.lower()):
            return
        model, message, lister = LOCATED[match[1]]
        found = self.row(model, self.kwargs[match[2]])
        if found is not None:
            self._located = found  # the permission check decides on it, the handler works on it
            return
        self.not_found(request, message, lister)

    def not_found(self, request, message, lister=None):
        """The object the path addresses does not exist: 404 with ``message``, or 403 to a caller
        who may not list that kind of object (``lister``, a role; None: anyone is told)."""
        caller = request.user
        if caller.user.realm_id != self.realm.pk and not caller.user.realm.is_master:
            return
        if lister is None or caller.may(lister, self.realm):
            raise errors.NotFound(message)
        raise exceptions.PermissionDenied()

    def auth_details(self) -> AuthDetails:
        """The caller, for the admin events of the changes this request makes."""
        return auth_details(self.request, self.request.user.user, self.request.user.client_id)


class NoRoute(ApiView):
    """Any other path under the API's prefix: 401 without a valid token, else a JSON 404."""

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        raise errors.NotFound(errors.NO_ROUTE)
