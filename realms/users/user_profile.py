"""The realm's user profile, as far as this server stores it: ``username``, ``email``,
``firstName`` and ``lastName`` with Keycloak 26's default rules (e-mail, first and last name
required; names unique in the realm; e-mail unique unless ``duplicateEmailsAllowed``; the e-mail
is the username under ``registrationEmailAsUsername``; the username changes only under
``editUsernameAllowed``; with UPDATE_EMAIL enabled the e-mail changes only through that
action). Used by the registration form, first broker login's review and the UPDATE_PROFILE and
UPDATE_EMAIL actions; errors are message keys of the bundle (or ``Message``), by field. Which of
the names and e-mail are required, their further validators and the realm's own attributes come
from the declarative profile (``realms.users.profile``)."""
from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from ..http.messages import Message
from ..models import User
from . import profile
from .actions import action_enabled

MAX_LENGTH = 255
FIELDS = (("username", "username"), ("email", "email"), ("firstName", "first_name"), ("lastName", "last_name"))
FIELDS_BY_NAME = dict(FIELDS)
UPDATE_EMAIL = "UPDATE_EMAIL"


def update_email_enabled(realm):
    """Keycloak's UPDATE_EMAIL required action is enabled in the realm: a user's address then
    changes only through it (confirmed by a link when the realm verifies addresses)."""
    return action_enabled(realm, UPDATE_EMAIL)


def email_editable(realm, user):
    """Whether the profile form changes the address: always at registration; otherwise unless
    UPDATE_EMAIL is enabled and the user has an address (Keycloak's UPDATE_PROFILE context)."""
    return user is None or not user.email or not update_email_enabled(realm)


def values(user):
    """The form's fields of ``user`` by their Keycloak names (the profile's own attributes as lists)."""
    if user is None:
        return {}
    return {**(user.attributes or {}), **{name: getattr(user, attr) for name, attr in FIELDS}}


def submitted(realm, data):
    """A form's values to show again: the four fixed fields as text, the profile's own attributes
    as their lists of values."""
    out = {name: data.get(name, "") for name, _ in FIELDS}
    for attr in profile.config.effective(realm)["attributes"]:
        name = attr["name"]
        if name not in out and name in data:
            out[name] = data.getlist(name) if hasattr(data, "getlist") else _as_list(data[name])
    return out


def _as_list(value):
    return list(value) if isinstance(value, list | tuple) else [value]


def form(realm, context, values, errors, scopes=()):
    """The profile as a page's form shows it: ``required`` of the four fixed fields by name, and
    ``groups``, the profile's own attributes ``[(group or None, [field])]`` in the profile's order,
    each field ``{"name", "label", "values", "error", "required", "read_only", "multivalued",
    "input", "options", "annotations"}`` (``input`` the annotation ``inputType``, ``options`` the
    ``options`` validator's); a group is ``{"name", "displayHeader", "displayDescription"}``."""
    prof = profile.Profile(realm, context, scopes)
    groups = {g["name"]: g for g in prof.config.get("groups") or ()}
    out = []
    for attr in prof.custom():
        given = values.get(attr.name, [])
        field = {"name": attr.name, "label": attr.display_name, "values": _as_list(given) or [""],
                 "error": errors.get(attr.name), "required": attr.required, "read_only": attr.read_only,
                 "multivalued": attr.multivalued, "annotations": attr.annotations,
                 "input": attr.annotations.get("inputType", "text"),
                 "options": (attr.validations.get("options") or {}).get("options", [])}
        group = groups.get(attr.group)
        if out and out[-1][0] is group:
            out[-1][1].append(field)
        else:
            out.append((group, [field]))
    return {"groups": out, "required": {name: _required(prof, name) for name, _ in FIELDS}}


def username_editable(realm, user):
    if realm.registration_email_as_username:
        return False
    return user is None or realm.edit_username_allowed


def validate(realm, user, data, context=None, scopes=()):
    """(cleaned values by model field, errors by form field) for ``data`` (a QueryDict or dict);
    ``user`` is None for a registration (``context`` then defaults to REGISTRATION, else to
    UPDATE_PROFILE); ``scopes`` the client scopes the sign-in asked for."""
    context = context or (profile.REGISTRATION if user is None else profile.UPDATE_PROFILE)
    prof = profile.Profile(realm, context, scopes)
    got = {name: (data.get(name) or "").strip() for name, _ in FIELDS}
    cleaned, errors = {}, {}
    email = got["email"].lower()
    if not email_editable(realm, user):
        # Read-only here (UPDATE_EMAIL changes it): absent means unchanged, a new value is refused.
        if email and email != user.email and not realm.registration_email_as_username:
            errors["email"] = "error-user-attribute-read-only"
        email = user.email
    error = check_email(realm, user, email, required=_required(prof, "email"))
    if error:
        errors["email"] = error
    else:
        cleaned["email"] = email
    if realm.registration_email_as_username:
        username = email
    elif username_editable(realm, user):
        username = got["username"].lower()
        if not username:
            errors["username"] = "missingUsernameMessage"
        elif len(username) > MAX_LENGTH or any(c in username for c in "<>&\"'\\/ \t"):
            errors["username"] = "invalidUsernameMessage"
        elif _username_taken(realm, user, username):
            errors["username"] = "usernameExistsMessage"
    else:
        username = user.username
    if username:
        cleaned["username"] = username
    for name, attr, missing in (("firstName", "first_name", "missingFirstNameMessage"),
                                ("lastName", "last_name", "missingLastNameMessage")):
        if not got[name]:
            if _required(prof, name):
                errors[name] = missing
            else:
                cleaned[attr] = ""
        elif len(got[name]) > MAX_LENGTH or any(c in got[name] for c in "<>&\"$%!#?§;*~/\\|^=[]{}()"):
            errors[name] = "invalidPersonNameMessage"
        else:
            cleaned[attr] = got[name]
    # The fixed fields as they will be, where this form changes them, for the profile's validators.
    fixed = {"username": username_editable(realm, user), "email": email_editable(realm, user),
             "firstName": True, "lastName": True}
    given = {name: [cleaned[attr]] for name, attr in FIELDS
             if fixed[name] and attr in cleaned and name in prof.by_name and prof.by_name[name].editable}
    own = {a.name: _as_list(data.getlist(a.name) if hasattr(data, "getlist") else data.get(a.name, []))
           for a in prof.custom() if a.editable}
    for name, message in prof.check({**given, **own}, skip=set(errors) | (set(FIELDS_BY_NAME) - set(given))):
        errors[name] = message
    if own or (user is not None and user.attributes):
        attributes, refused = prof.merge_attributes(user.attributes if user is not None else {}, own,
                                                    remove_missing=False)
        for name in refused:
            errors[name] = "error-user-attribute-read-only"
        cleaned["attributes"] = attributes
    return cleaned, errors


def _required(prof, name):
    attr = prof.by_name.get(name)
    return attr is not None and attr.required


def check_admin_write(realm, fields, given, user=None):
    """An administrator's write (the Admin API, SCIM) checked against the profile: ``fields`` the
    model fields it sets, ``given`` the attributes it sends ({name: [values]}, None when it sends
    none), ``user`` None for a creation. Returns (the user's attributes to store, or None when
    ``given`` is None; errors ``[(attribute, Message)]``). A value the write does not change is not
    checked again (a user stored before the profile changed stays editable), except that a
    required attribute must be there."""
    prof = profile.Profile(realm, profile.USER_API)
    stored = dict(user.attributes or {}) if user is not None else {}
    final = {name: [fields[attr] if attr in fields else getattr(user, attr, "") or ""] for name, attr in FIELDS}
    attributes, problems = None, []
    if given is not None:
        attributes, refused = prof.merge_attributes(stored, given)
        problems += [(name, Message("error-user-attribute-read-only", prof.by_name[name].display_name))
                     for name in refused]
    changed = {name for name, attr in FIELDS if attr in fields} | set(given or ())
    unchanged = {a.name for a in prof.attributes if a.name not in changed and not a.required}
    problems += prof.check({**final, **(attributes if attributes is not None else stored)}, skip=unchanged)
    return attributes, problems


def incomplete(realm, user, scopes=()):
    """Whether ``user`` as stored does not satisfy the realm's profile (a required attribute
    missing, a value its validators refuse): what VERIFY_PROFILE asks the user to complete."""
    return bool(validate(realm, user, values(user), profile.UPDATE_PROFILE, scopes)[1])


def check_email(realm, user, email, required=True):
    """The error key for ``email`` as the address of ``user`` (None for a registration), or None:
    present (unless the profile makes it optional), well-formed, not another user's (unless
    ``duplicateEmailsAllowed``), and not another user's username when the e-mail is the username."""
    if not email:
        return "missingEmailMessage" if required or realm.registration_email_as_username else None
    if len(email) > MAX_LENGTH or not _valid_email(email):
        return "invalidEmailMessage"
    others = User.objects.filter(realm=realm, email__iexact=email)
    if user is not None:
        others = others.exclude(pk=user.pk)
    if not realm.duplicate_emails_allowed and others.exists():
        return "emailExistsMessage"
    if realm.registration_email_as_username and _username_taken(realm, user, email):
        return "emailExistsMessage"
    return None


def apply(user, cleaned):
    """Store ``cleaned`` on ``user``; a changed e-mail address is no longer verified. Returns
    the previous e-mail address when it changed, else None."""
    previous = user.email
    for attr, value in cleaned.items():
        setattr(user, attr, value)
    if cleaned.get("email", previous) != previous:
        user.email_verified = False
        return previous
    return None


def _valid_email(value):
    try:
        validate_email(value)
    except ValidationError:
        return False
    return True


def _username_taken(realm, user, username):
    others = User.objects.filter(realm=realm, username=username)
    if user is not None:
        others = others.exclude(pk=user.pk)
    return others.exists()
