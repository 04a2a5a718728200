"""``/admin/realms/{realm}/client-policies/policies`` and ``/profiles`` (Keycloak's
ClientPoliciesResource and ClientProfilesResource: ``view-realm`` to read, ``manage-realm`` to
write, 400 ``{"errorMessage": ...}`` on a document it refuses). No condition or executor is
implemented yet (decision 0081): a realm has no policy and no profile, no global profile is
offered, and a document that names a policy or a profile is refused rather than ignored."""
from rest_framework import status
from rest_framework.response import Response

from ..representation import RepresentationError
from ..representation.realm import check_client_policies
from . import errors
from .views import RealmResource


def _flag(request, name):
    return request.query_params.get(name, "").lower() == "true"


class ClientPolicies(RealmResource):
    required_role = {"GET": "view-realm", "PUT": "manage-realm"}

    def get(self, request, realm):
        rep = {"policies": []}
        if _flag(request, "include-global-policies"):
            rep["globalPolicies"] = []
        return Response(rep)

    def put(self, request, realm):
        try:
            check_client_policies(request.data, "")
        except RepresentationError as exc:
            raise errors.Invalid(str(exc)) from None
        return Response(status=status.HTTP_204_NO_CONTENT)


class ClientProfiles(RealmResource):
    required_role = {"GET": "view-realm", "PUT": "manage-realm"}

    def get(self, request, realm):
        rep = {"profiles": []}
        if _flag(request, "include-global-profiles"):
            rep["globalProfiles"] = []
        return Response(rep)

    def put(self, request, realm):
        # A profile only acts through a policy, and none can be stored: refused, never kept unused.
        if not isinstance(request.data, dict) or request.data.get("profiles"):
            raise errors.Invalid("client profiles are not supported by this server")
        return Response(status=status.HTTP_204_NO_CONTENT)
