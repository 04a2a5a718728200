"""The realm's user profile, as far as this server stores it: ``username``, ``email``,
``firstName`` and ``lastName`` with Keycloak 26's default rules (e-mail, first and last name
required; names unique in the realm; e-mail unique unless ``duplicateEmailsAllowed``; the e-mail
is the username under ``registrationEmailAsUsername``; the username changes only under
``editUsernameAllowed``). Used by the registration form and the UPDATE_PROFILE action; errors
are message keys of the bundle, by field."""
from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from .models import User

MAX_LENGTH = 255
FIELDS = (("username", "username"), ("email", "email"), ("firstName", "first_name"), ("lastName", "last_name"))


def values(user):
    """The form's fields of ``user`` by their Keycloak names."""
    return {name: getattr(user, attr) for name, attr in FIELDS} if user is not None else {}


def username_editable(realm, user):
    if realm.registration_email_as_username:
        return False
    return user is None or realm.edit_username_allowed


def validate(realm, user, data):
    """(cleaned values by model field, errors by form field) for ``data`` (a QueryDict or dict);
    ``user`` is None for a registration."""
    got = {name: (data.get(name) or "").strip() for name, _ in FIELDS}
    cleaned, errors = {}, {}
    email = got["email"].lower()
    if not email:
        errors["email"] = "missingEmailMessage"
    elif len(email) > MAX_LENGTH or not _valid_email(email):
        errors["email"] = "invalidEmailMessage"
    else:
        others = User.objects.filter(realm=realm, email__iexact=email)
        if user is not None:
            others = others.exclude(pk=user.pk)
        if not realm.duplicate_emails_allowed and others.exists():
            errors["email"] = "emailExistsMessage"
        cleaned["email"] = email
    if realm.registration_email_as_username:
        username = email
        if email and "email" not in errors and _username_taken(realm, user, email):
            errors["email"] = "emailExistsMessage"
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
            errors[name] = missing
        elif len(got[name]) > MAX_LENGTH or any(c in got[name] for c in "<>&\"$%!#?§;*~/\\|^=[]{}()"):
            errors[name] = "invalidPersonNameMessage"
        else:
            cleaned[attr] = got[name]
    return cleaned, errors


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
