"""``/admin/realms/{realm}/users/profile`` and ``users/profile/metadata`` (Keycloak's
UserProfileResource): the realm's UPConfig read by any administrator of the realm and replaced by
``manage-realm`` (the document stored as written, answered back); a document the server cannot
honour (an unknown validator, a bad validator config, an undefined group) is refused with 400
``{"errorMessage": ...}`` and nothing is stored. The metadata is the profile as the Admin API's
user forms see it."""
from django.db import transaction
from rest_framework import status
from rest_framework.response import Response

from ..users import profile, user_profile
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


def _field_error(name, message):
    return {"field": name, "errorMessage": message.key, "params": [str(p) for p in message.args]}


def check_user(realm, data, fields, user=None):
    """A user representation written through the Admin API checked against the profile: the
    errors answered as Keycloak answers them (400, one error as ``{"field", "errorMessage",
    "params"}``, several under ``errors``), or None; with ``attributes`` in the representation,
    ``fields["attributes"]`` becomes what the profile lets an administrator write."""
    given = profile.as_lists(data.get("attributes")) if isinstance(data.get("attributes"), dict) else None
    attributes, problems = user_profile.check_admin_write(realm, fields, given, user)
    if attributes is not None:
        fields["attributes"] = attributes
    if not problems:
        return None
    body = [_field_error(name, message) for name, message in problems]
    return Response(body[0] if len(body) == 1 else {"errors": body}, status=status.HTTP_400_BAD_REQUEST)


def shown(realm):
    """``keep(rep)``: a user representation with only the attributes the profile shows an
    administrator (unmanaged ones as ``unmanagedAttributePolicy`` says)."""
    prof = profile.Profile(realm, profile.USER_API)

    def keep(rep):
        if "attributes" in rep:
            rep["attributes"] = prof.visible_attributes(rep["attributes"])
        return rep
    keep.profile = prof
    return keep


def with_metadata(request, realm, rep):
    """The user representation as ``shown``, with ``userProfileMetadata`` when asked."""
    keep = shown(realm)
    rep = keep(rep)
    if request.query_params.get("userProfileMetadata", "").lower() == "true":
        rep["userProfileMetadata"] = keep.profile.metadata()
    return rep
