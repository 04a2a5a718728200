"""A user's credentials (Keycloak's UserResource): ``users/{id}/credentials`` lists them best
first as CredentialRepresentation without ``secretData``; one is removed, relabelled
(``userLabel``, a text/plain body), or reordered (``moveToFirst``, ``moveAfter/{previous}``).
``configured-user-storage-credential-types`` are the types the user's storage provider (LDAP ...)
holds for a federated user; ``disable-credential-types`` asks the providers to disable types, as
Keycloak (no provider here disables one: Keycloak's own local password and OTP providers do
nothing there either), after checking the body."""
from django.db import transaction
from rest_framework import status
from rest_framework.response import Response

from ..audit import admin_events
from ..credentials import credential_type_names
from ..models import Credential
from ..representation.users import credential_rep
from ..users import storage
from . import errors
from .users import user_of
from .views import RealmResource

LABEL_MAX = 255


def _api_rep(cred):
    return {k: v for k, v in credential_rep(cred).items() if k != "secretData"}


def _ordered(user):
    """Best first, as the sign-in reads them (``User.stored_credentials``)."""
    return list(user.stored_credentials())


class _UserCredential(RealmResource):
    def credential(self):
        user = user_of(self, self.kwargs["user_id"])
        cred = Credential.objects.filter(user=user, pk=self.kwargs["credential_id"]).first()
        if cred is None:
            raise errors.NotFound("Credential not found")
        return user, cred

    def event(self, user):
        """Keycloak records these as an ACTION on the request's own path."""
        path = self.request.path.split(f"/admin/realms/{self.realm.name}/", 1)[-1]
        admin_events.record(self.realm, "ACTION", "USER", path, auth=self.auth_details())
        user.forget_credentials()


class Credentials(RealmResource):
    required_role = "view-users"

    def get(self, request, realm, user_id):
        return Response([_api_rep(c) for c in _ordered(user_of(self, user_id))])


class CredentialDetail(_UserCredential):
    required_role = {"DELETE": "manage-users"}

    def delete(self, request, realm, user_id, credential_id):
        user, cred = self.credential()
        with transaction.atomic():
            cred.delete()
            self.event(user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class CredentialLabel(_UserCredential):
    """PUT the new label as the body itself (``text/plain``, as Keycloak's admin clients send it).
    Decided as a password reset (Keycloak 26.4.4: its console labels the password it just reset)."""

    required_role = {"PUT": "manage-users"}
    fine_grained = {"PUT": [("Users", "reset-password", "user_id")]}

    def put(self, request, realm, user_id, credential_id):
        user, cred = self.credential()
        try:
            label = request.body.decode("utf-8").strip()
        except UnicodeDecodeError:
            raise errors.Invalid("Invalid user label") from None
        if len(label) > LABEL_MAX:
            raise errors.Invalid("Invalid user label")
        with transaction.atomic():
            cred.user_label = label
            cred.save(update_fields=["user_label"])
            self.event(user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class CredentialMove(_UserCredential):
    """``moveToFirst`` (no ``previous_id``) or ``moveAfter/{previous_id}``: the order is rewritten
    as priorities, best first."""

    required_role = {"POST": "manage-users"}

    def post(self, request, realm, user_id, credential_id, previous_id=None):
        user, cred = self.credential()
        order = [c for c in _ordered(user) if c.pk != cred.pk]
        if previous_id is None:
            order.insert(0, cred)
        else:
            at = next((i for i, c in enumerate(order) if c.pk == previous_id), None)
            if at is None:
                raise errors.NotFound("Credential not found")
            order.insert(at + 1, cred)
        with transaction.atomic():
            for rank, c in enumerate(order):
                c.priority = (len(order) - rank) * 10  # higher first (User.stored_credentials)
            Credential.objects.bulk_update(order, ["priority"])
            self.event(user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class DisableCredentialTypes(RealmResource):
    required_role = {"PUT": "manage-users"}

    def put(self, request, realm, user_id):
        user_of(self, user_id)
        types = request.data
        if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
            raise errors.Invalid("Expected a list of credential types")
        return Response(status=status.HTTP_204_NO_CONTENT)


class ConfiguredStorageTypes(RealmResource):
    required_role = "view-users"

    def get(self, request, realm, user_id):
        user = user_of(self, user_id)
        if user.federation_link_id is None:
            return Response([])
        return Response([t for t in credential_type_names() if storage.is_configured_for(self.realm, user, t)])
