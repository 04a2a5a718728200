"""``/admin/realms/{realm}/users/profile`` and ``users/profile/metadata`` (Keycloak's
UserProfileResource): the realm's UPConfig read by any administrator of the realm and replaced by
``manage-realm`` (the document stored as written, answered back); a document the server cannot
honour (an unknown validator, a bad validator config, an undefined group) is refused with 400
``{"errorMessage": ...}`` and nothing is stored. The metadata is the profile as the Admin API's
user forms see it."""
from django.db import transaction
from rest_framework import status
from rest_framework.response import Response

from ..http.messages import Message
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
    """A user representation written through the Admin API checked against the profile (the
    USER_API context): the errors answered as Keycloak answers them (400, one error as
    ``{"field", "errorMessage", "params"}``, several under ``errors``), or None. When the
    representation has ``attributes``, ``fields["attributes"]`` becomes the user's attributes as
    the profile lets an administrator write them (the rest kept, unmanaged ones as the policy says)."""
    prof = profile.Profile(realm, profile.USER_API)
    final = {name: [fields[attr] if attr in fields else getattr(user, attr, "") or ""]
             for name, attr in user_profile.FIELDS}
    stored = dict(user.attributes or {}) if user is not None else {}
    given = profile.as_lists(data.get("attributes")) if isinstance(data.get("attributes"), dict) else None
    problems = []
    if given is not None:
        fields["attributes"], refused = prof.merge_attributes(stored, given)
        problems += [_field_error(name, Message("error-user-attribute-read-only", prof.by_name[name].display_name))
                     for name in refused]
    values = {**final, **(fields.get("attributes", stored))}
    # A value the representation does not change is not checked again (a user stored before the
    # profile changed stays editable), except that a required attribute must be there.
    changed = {name for name, attr in user_profile.FIELDS if attr in fields} | set(given or ())
    unchanged = {a.name for a in prof.attributes if a.name not in changed and not a.required}
    problems += [_field_error(name, message) for name, message in prof.check(values, skip=unchanged)]
    if not problems:
        return None
    return Response(problems[0] if len(problems) == 1 else {"errors": problems}, status=status.HTTP_400_BAD_REQUEST)


def with_metadata(request, realm, rep):
    """The user representation, with ``userProfileMetadata`` when asked, its attributes those the
    profile shows an administrator."""
    prof = profile.Profile(realm, profile.USER_API)
    if "attributes" in rep:
        rep["attributes"] = prof.visible_attributes(rep["attributes"])
    if request.query_params.get("userProfileMetadata", "").lower() == "true":
        rep["userProfileMetadata"] = prof.metadata()
    return rep
