"""``/admin/realms/{realm}/client-policies/policies`` and ``/profiles`` (Keycloak's
ClientPoliciesResource and ClientProfilesResource: ``view-realm`` to read, ``manage-realm`` to
write, 400 ``{"errorMessage": ...}`` on a document it refuses: an unknown condition or executor,
a policy naming no profile, a profile named like a global one). A PUT replaces the document."""
from django.db import transaction
from rest_framework import status
from rest_framework.response import Response

from ..representation import RepresentationError
from ..representation import client_policies as cp
from . import errors
from .views import RealmResource


def _flag(request, name):
    return request.query_params.get(name, "").lower() == "true"


class _Document(RealmResource):
    required_role = {"GET": "view-realm", "PUT": "manage-realm"}

    def _save(self, attributes):
        with transaction.atomic():
            self.realm.attributes = attributes
            self.realm.save(update_fields=["attributes"])


class ClientPolicies(_Document):
    def get(self, request, realm):
        rep = cp.stored_policies(self.realm.attributes)
        if _flag(request, "include-global-policies"):
            rep["globalPolicies"] = []  # Keycloak ships none
        return Response(rep)

    def put(self, request, realm):
        profiles = cp.stored_profiles(self.realm.attributes)
        try:
            policies = cp.parse_policies(request.data, "", [p["name"] for p in profiles["profiles"]])
        except RepresentationError as exc:
            raise errors.Invalid(str(exc)) from None
        self._save(cp.store(self.realm.attributes, policies=policies))
        return Response(status=status.HTTP_204_NO_CONTENT)


class ClientProfiles(_Document):
    def get(self, request, realm):
        rep = cp.stored_profiles(self.realm.attributes)
        if _flag(request, "include-global-profiles"):
            rep["globalProfiles"] = cp.global_profiles()
        return Response(rep)

    def put(self, request, realm):
        try:
            profiles = cp.parse_profiles(request.data)
            cp.check_profiles_in_use(cp.stored_policies(self.realm.attributes), profiles)
        except RepresentationError as exc:
            raise errors.Invalid(str(exc)) from None
        self._save(cp.store(self.realm.attributes, profiles=profiles))
        return Response(status=status.HTTP_204_NO_CONTENT)
