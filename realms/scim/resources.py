"""Users and groups as SCIM resources: the document of one (``to_scim``), the realm's query
fields for filters and sorting, and ``write`` (create or replace, the one way a resource changes:
PUT, POST and a patched document all come here), each change an admin event in its transaction.
A user's store refusing or unreachable is answered by ``errors.exception_handler``."""
import hashlib
import json

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction

from ..audit import admin_events
from ..credentials import password_policy
from ..data import rows
from ..data.user_queries import listed_count
from ..http import messages
from ..models import Group, User
from ..users import storage, user_profile
from ..users.accounts import create_user
from .errors import ScimError
from .filters import Field
from .schemas import GROUP, GROUP_ATTRIBUTES, USER, USER_ATTRIBUTES


def _get(doc, name, default=None):
    """``doc[name]`` without regard to the case of the name (RFC 7643 §2.1)."""
    for key, value in doc.items():
        if key.lower() == name.lower():
            return value
    return default


def _text(value, name, *, required=False):
    if value is None or value == "":
        if required:
            raise ScimError(400, f"{name} is required", "invalidValue")
        return ""
    if not isinstance(value, str):
        raise ScimError(400, f"{name} must be a string", "invalidValue")
    return value


def _external_id(obj):
    return (obj.attributes.get("externalId") or [None])[0]


def _with_external_id(attributes, doc):
    """``attributes`` with the document's externalId, or without one when it has none."""
    value = _text(_get(doc, "externalId"), "externalId")
    attributes = dict(attributes or {})
    if value:
        attributes["externalId"] = [value]
    else:
        attributes.pop("externalId", None)
    return attributes


_SCIM_NAMES = {"username": "userName", "email": "emails.value", "firstName": "name.givenName",
               "lastName": "name.familyName"}


def _check_profile(realm, fields, user):
    """The realm's user profile as an administrator writes it (``users.user_profile``): a value
    its validators refuse, or an attribute it requires that SCIM does not carry, is a 400."""
    _, problems = user_profile.check_admin_write(realm, fields, None, user)
    if problems:
        detail = "; ".join(f"{_SCIM_NAMES.get(name, name)}: "
                           f"{messages.text(realm, messages.FALLBACK_LOCALE, m.key, *m.args)}" for name, m in problems)
        raise ScimError(400, detail, "invalidValue")


def version(doc):
    """The weak ETag of a document: a digest of what it says (meta aside)."""
    body = json.dumps({k: v for k, v in doc.items() if k != "meta"}, sort_keys=True, default=str)
    return 'W/"' + hashlib.sha256(body.encode()).hexdigest()[:24] + '"'


def _meta(doc, resource_type, location, created=None):
    doc["meta"] = {"resourceType": resource_type, "location": location, "version": version(doc)}
    if created is not None:
        doc["meta"]["created"] = created.isoformat().replace("+00:00", "Z")
    return doc


class UserResource:
    name, endpoint, schema, attributes = "User", "Users", USER, USER_ATTRIBUTES
    fields = {
        "id": Field("pk", case_exact=True), "username": Field("username"),
        "name.givenname": Field("first_name"), "name.familyname": Field("last_name"),
        "emails.value": Field("email"), "active": Field("enabled", "bool"),
        "externalid": Field("attributes__externalId__0", case_exact=True),
        "meta.created": Field("created", "datetime"),
        "groups.value": Field("groups__pk", case_exact=True), "groups.display": Field("groups__name"),
    }
    default_order = ("created", "pk")
    # The unfiltered list's size: the realm's tally counts exactly these users (decision 0041).
    count_all = staticmethod(listed_count)

    @staticmethod
    def queryset(realm):
        # Service accounts belong to their clients; provisioning never sees them.
        return User.objects.filter(realm=realm, service_account_client__isnull=True).prefetch_related("groups")

    @staticmethod
    def to_scim(user, base):
        doc = {"schemas": [USER], "id": str(user.pk), "userName": user.username, "active": user.enabled}
        if _external_id(user):
            doc["externalId"] = _external_id(user)
        name = {k: v for k, v in (("givenName", user.first_name), ("familyName", user.last_name)) if v}
        if name:
            doc["name"] = name
        if user.email:
            doc["emails"] = [{"value": user.email}]
        groups = [{"value": str(g.pk), "$ref": f"{base}/Groups/{g.pk}", "display": g.name}
                  for g in sorted(user.groups.all(), key=lambda g: g.name)]
        if groups:
            doc["groups"] = groups
        return _meta(doc, "User", f"{base}/Users/{user.pk}", user.created)

    @staticmethod
    def write(realm, user, doc, auth):
        username = _text(_get(doc, "userName"), "userName", required=True).lower()
        if user is not None and username != user.username and not realm.edit_username_allowed:
            raise ScimError(400, "userName cannot be changed in this realm", "mutability")
        name = _get(doc, "name") or {}
        if not isinstance(name, dict):
            raise ScimError(400, "name must be an object", "invalidValue")
        emails = _get(doc, "emails") or []
        if not isinstance(emails, list) or not all(isinstance(e, dict) for e in emails):
            raise ScimError(400, "emails must be a list of objects", "invalidValue")
        chosen = next((e for e in emails if _get(e, "primary") is True), emails[0] if emails else {})
        email = _text(_get(chosen, "value"), "emails.value")
        if email:
            try:
                validate_email(email)
            except ValidationError:
                raise ScimError(400, f"Not an e-mail address: {email}", "invalidValue") from None
        active = _get(doc, "active")
        if isinstance(active, str) and active.lower() in ("true", "false"):
            active = active.lower() == "true"
        if active is not None and not isinstance(active, bool):
            raise ScimError(400, "active must be a boolean", "invalidValue")
        password = _get(doc, "password")
        if password is not None and not isinstance(password, str):
            raise ScimError(400, "password must be a string", "invalidValue")

        others = User.objects.filter(realm=realm).exclude(pk=getattr(user, "pk", None))
        if others.filter(username=username).exists():
            raise ScimError(409, "User exists with same username", "uniqueness")
        if email and not realm.duplicate_emails_allowed and others.filter(email__iexact=email).exists():
            raise ScimError(409, "User exists with same email", "uniqueness")
        fields = {"username": username, "first_name": _text(_get(name, "givenName"), "name.givenName"),
                  "last_name": _text(_get(name, "familyName"), "name.familyName"), "email": email}
        _check_profile(realm, fields, user)
        try:
            with rows.batch():  # a new user's rows in one round trip, after the password's hash
                created = user is None
                if active is not None:
                    fields["enabled"] = active
                if created:  # one INSERT with every field
                    user = create_user(realm, fields.pop("username"), password=password,
                                       attributes=_with_external_id({}, doc), **fields)
                else:
                    for key, value in fields.items():
                        setattr(user, key, value)
                    user.attributes = _with_external_id(user.attributes, doc)
                    user.save()
                    if password is not None:
                        storage.set_password(realm, user, password)  # a directory user's in the directory
                admin_events.record(realm, "CREATE" if created else "UPDATE", "USER", f"users/{user.pk}",
                                    auth=auth, representation=lambda: UserResource.to_scim(user, ""))
        except storage.ReadOnly as exc:  # RFC 7644's word for a value the server keeps
            raise ScimError(400, str(exc), "mutability") from None
        except password_policy.PasswordPolicyError as exc:  # the policy's or the directory's words
            raise ScimError(400, str(exc), "invalidValue") from None
        except IntegrityError:  # the same username at the same moment
            raise ScimError(409, "User exists with same username", "uniqueness") from None
        return user

    @staticmethod
    def delete(realm, user, auth):
        with transaction.atomic():
            admin_events.record(realm, "DELETE", "USER", f"users/{user.pk}", auth=auth)
            storage.delete_user(realm, user)  # a writable directory's entry too (errors: errors.exception_handler)


class GroupResource:
    name, endpoint, schema, attributes = "Group", "Groups", GROUP, GROUP_ATTRIBUTES
    fields = {
        "id": Field("pk", case_exact=True), "displayname": Field("name"),
        "externalid": Field("attributes__externalId__0", case_exact=True),
        "members.value": Field("members__pk", case_exact=True),
    }
    default_order = ("name", "pk")
    count_all = None

    @staticmethod
    def queryset(realm):
        return Group.objects.filter(realm=realm).prefetch_related("members")

    @staticmethod
    def to_scim(group, base):
        doc = {"schemas": [GROUP], "id": str(group.pk), "displayName": group.name}
        if _external_id(group):
            doc["externalId"] = _external_id(group)
        members = [{"value": str(u.pk), "$ref": f"{base}/Users/{u.pk}", "type": "User"}
                   for u in sorted(group.members.all(), key=lambda u: u.username)]
        if members:
            doc["members"] = members
        return _meta(doc, "Group", f"{base}/Groups/{group.pk}")

    @staticmethod
    def _members(realm, doc):
        members = _get(doc, "members") or []
        if not isinstance(members, list) or not all(isinstance(m, dict) for m in members):
            raise ScimError(400, "members must be a list of objects", "invalidValue")
        ids = []
        for member in members:
            kind = _get(member, "type")
            if kind not in (None, "User"):
                raise ScimError(400, f"Only users can be members here, not {kind}", "invalidValue")
            value = _get(member, "value") or (_get(member, "$ref") or "").rstrip("/").rsplit("/", 1)[-1]
            if not isinstance(value, str) or not value:
                raise ScimError(400, "A member needs a value (the user's id)", "invalidValue")
            ids.append(value)
        users = list(User.objects.filter(realm=realm, pk__in=ids, service_account_client__isnull=True))
        missing = set(ids) - {str(u.pk) for u in users}
        if missing:
            raise ScimError(400, f"No such user: {sorted(missing)[0]}", "invalidValue")
        return users

    @staticmethod
    def write(realm, group, doc, auth):
        name = _text(_get(doc, "displayName"), "displayName", required=True)
        users = GroupResource._members(realm, doc)
        siblings = Group.objects.filter(realm=realm, parent=getattr(group, "parent", None), name=name)
        if siblings.exclude(pk=getattr(group, "pk", None)).exists():
            raise ScimError(409, f"Top level group named '{name}' already exists.", "uniqueness")
        try:
            with transaction.atomic():
                created = group is None
                group = group or Group(realm=realm)
                group.name = name
                group.attributes = _with_external_id(group.attributes, doc)
                group.save()
                group.members.set(users)
                admin_events.record(realm, "CREATE" if created else "UPDATE", "GROUP", f"groups/{group.pk}",
                                    auth=auth, representation=lambda: GroupResource.to_scim(group, ""))
        except IntegrityError:
            raise ScimError(409, f"Top level group named '{name}' already exists.", "uniqueness") from None
        return group

    @staticmethod
    def delete(realm, group, auth):
        with transaction.atomic():
            admin_events.record(realm, "DELETE", "GROUP", f"groups/{group.pk}", auth=auth)
            group.delete()


RESOURCES = {r.endpoint: r for r in (UserResource, GroupResource)}
