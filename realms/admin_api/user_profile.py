"""``/admin/realms/{realm}/users/profile`` and ``users/profile/metadata`` (Keycloak's
UserProfileResource): the realm's UPConfig read by any administrator of the realm and replaced by
``manage-realm`` (the document stored as written, answered back); a document the server cannot
honour (an unknown validator, a bad validator config, an undefined group) is refused with 400
``{"errorMessage": ...}`` and nothing is stored. The metadata is the profile as the Admin API's
user forms see it."""
from django.db import transaction
from rest_framework.response import Response

from ..users import profile
from ..users.profile import config as upconfig
from ..users.profile.validators import ConfigError
from . import errors
from .views import RealmResource

_ANY_ADMIN = ("view-realm", "manage-realm", "view-users", "manage-users", "query-users")


class UserProfile(RealmResource):
    required_role = {"GET": _ANY_ADMIN, "PUT": "manage-realm"}

    def get(self, request, realm):
        return Response(upconfig.rep(self.realm))

    def put(self, request, realm):
        try:
            with transaction.atomic():
                stored = upconfig.store(self.realm, request.data)
        except ConfigError as exc:
            raise errors.Invalid(str(exc)) from None
        return Response(stored)


class UserProfileMetadata(RealmResource):
    required_role = {"GET": _ANY_ADMIN}

    def get(self, request, realm):
        return Response(profile.Profile(self.realm, profile.USER_API).metadata())
